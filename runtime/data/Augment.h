//===- Augment.h - Image augmentations for ViT training ---------*- C++ -*-===//
//
// The transforms of DeiT-3 / timm training and evaluation, on Image (pixels
// in [0, 1], [C, H, W]) and on whole batches for Mixup / CutMix: the random
// draws (Draws.h), geometry (ImageGeometry.h), colour (ImageColour.h) and
// the mixing of batches (Mixing.h).
//
// All randomness comes from the caller's std::mt19937_64 through uniform()
// and uniformIndex() (Draws.h), never std::*_distribution, whose results
// differ between standard libraries; every function documents the draws it
// makes, in order, so a seed gives the same images on every machine.
//
// Bad input (an image whose pixel count does not match its shape, a size
// < 1, a parameter out of range) throws std::runtime_error naming the
// function and the problem; nothing is modified before the check.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_AUGMENT_H
#define LAP_RUNTIME_DATA_AUGMENT_H

#include "runtime/data/Draws.h"
#include "runtime/data/ImageColour.h"
#include "runtime/data/ImageGeometry.h"
#include "runtime/data/Mixing.h"

#endif // LAP_RUNTIME_DATA_AUGMENT_H

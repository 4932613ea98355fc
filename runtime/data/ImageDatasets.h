//===- ImageDatasets.h - Labelled image data sets ---------------*- C++ -*-===//
//
// The image classification data the ViT regimes train on, read from the
// formats it is distributed in:
//
//   IDX (MNIST, Fashion-MNIST): an idx3-ubyte images file and an idx1-ubyte
//     labels file with big-endian headers, gzip-compressed or raw. 1 channel,
//     10 classes named "0".."9".
//   CIFAR binary: records of label byte(s) then 3072 pixel bytes (the R, G
//     and B planes of a 32x32 image). CIFAR-10 records have one label byte
//     (10 classes); CIFAR-100 records a coarse then a fine label byte, and
//     the fine label (100 classes) is used. Several files concatenate. Class
//     names come from batches.meta.txt (CIFAR-10) or fine_label_names.txt
//     (CIFAR-100) next to the first file when it is there, else "0", "1", ...
//   ImageFolder (the ImageNet layout): root/<class>/<file>, classes and files
//     sorted by name, files ending in .jpg, .jpeg or .png (any case), other
//     files ignored. Files are listed on open and decoded in image(i), by
//     their content rather than their extension: JPEG or PNG, grayscale as
//     1 channel, colour as 3 (alpha dropped, 16-bit scaled to 8).
//
// IDX and CIFAR are held in memory as bytes (a quarter of the floats) and
// converted in image(i). Every reader validates its input and throws
// std::runtime_error "PATH: PROBLEM"; so does image(i) for a file that does
// not decode. An index out of range is std::out_of_range.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGEDATASETS_H
#define LAP_RUNTIME_DATA_IMAGEDATASETS_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lap::data {

/// A labelled image data set. image(i) may be called from several threads at
/// once.
class ImageDataset {
public:
  virtual ~ImageDataset() = default;
  virtual int64_t size() const = 0;
  virtual int32_t label(int64_t i) const = 0; ///< in [0, numClasses())
  virtual int64_t numClasses() const = 0;
  virtual const std::vector<std::string> &classNames() const = 0;
  virtual Image image(int64_t i) const = 0; ///< decoded, pixels / 255
  /// e.g. "60000 images 1x28x28, 10 classes (train-images-idx3-ubyte.gz)"
  virtual std::string description() const = 0;
};

/// Reads an IDX images file (magic 0x00000803) and its labels file (magic
/// 0x00000801), each gzip-compressed or raw.
std::unique_ptr<ImageDataset> readIdx(const std::string &imagesPath,
                                      const std::string &labelsPath);

/// Reads and concatenates CIFAR binary files: CIFAR-100 with fine labels
/// when `cifar100Fine`, else CIFAR-10.
std::unique_ptr<ImageDataset> readCifar(const std::vector<std::string> &paths,
                                        bool cifar100Fine);

/// Lists root/<class>/<file>; images are decoded on demand. An entry named
/// like an image (.jpg, .jpeg, .png) that is no regular file — a dangling
/// link, a FIFO, a device, a directory — is skipped, and the skips are
/// counted in description(); with `strict` the first is an error.
std::unique_ptr<ImageDataset> openImageFolder(const std::string &root,
                                              bool strict = false);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_IMAGEDATASETS_H

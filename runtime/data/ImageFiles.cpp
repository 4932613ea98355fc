//===- ImageFiles.cpp - JPEG and PNG files to images ------------*- C++ -*-===//

#include "runtime/data/ImageFiles.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

// jpeglib.h uses FILE and size_t without including their headers.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <fstream>
#include <stdexcept>

using namespace lap::data;

namespace {

using lap::platform::fail;

} // namespace

//===----------------------------------------------------------------------===//
// Decoding JPEG and PNG
//===----------------------------------------------------------------------===//
//
// libjpeg and libpng report errors through callbacks that must not return;
// here they longjmp back to a setjmp in a run* function. Such a jump must not
// skip a destructor, so the run* functions own nothing: the decoder state and
// the output belong to their caller, which cleans up in destructors.
//
//===----------------------------------------------------------------------===//

namespace {

/// Refuses images larger than this before allocating them, so a damaged
/// header claiming a vast size is an error rather than an exhausted machine.
constexpr uint64_t kMaxPixels = uint64_t(1) << 28;

/// Pixels as the codecs produce them: interleaved [H, W, C] bytes.
struct DecodedPixels {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<uint8_t> bytes;
};

Image toImage(const DecodedPixels &in) {
  Image out(in.channels, in.height, in.width);
  const uint8_t *p = in.bytes.data();
  for (int64_t y = 0; y < in.height; ++y)
    for (int64_t x = 0; x < in.width; ++x)
      for (int64_t c = 0; c < in.channels; ++c)
        out.at(c, y, x) = float(*p++) / 255.0f;
  return out;
}

struct JpegErrors {
  jpeg_error_mgr manager; // first: libjpeg hands back &manager as cinfo->err
  std::jmp_buf escape;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpegFail(j_common_ptr cinfo) {
  auto *errors = reinterpret_cast<JpegErrors *>(cinfo->err);
  cinfo->err->format_message(cinfo, errors->message);
  std::longjmp(errors->escape, 1);
}

void jpegMessage(j_common_ptr cinfo, int level) {
  // Warnings about damage the decoder recovers from (stray bytes, a bad
  // Huffman code) are ignored, silently since many threads decode at once.
  // A file that ends before its image does is refused.
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF)
    jpegFail(cinfo);
}

struct JpegDecoder {
  jpeg_decompress_struct
      cinfo{}; // zeroed, so destroying it before creation is a no-op
  JpegErrors errors{};

  JpegDecoder() {
    cinfo.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = jpegFail;
    errors.manager.emit_message = jpegMessage;
  }
  ~JpegDecoder() { jpeg_destroy_decompress(&cinfo); }
  JpegDecoder(const JpegDecoder &) = delete;
  JpegDecoder &operator=(const JpegDecoder &) = delete;
};

/// Decodes `file` into `out`: 1 channel for grayscale, 4 for CMYK and YCCK
/// (libjpeg does not convert those to RGB), else 3. Returns false with the
/// message in decoder.errors when libjpeg fails.
bool runJpeg(JpegDecoder &decoder, const std::vector<uint8_t> &file,
             DecodedPixels &out) {
  if (setjmp(decoder.errors.escape))
    return false;
  jpeg_decompress_struct &cinfo = decoder.cinfo;
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, file.data(), static_cast<unsigned long>(file.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (uint64_t(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(decoder.errors.message, sizeof decoder.errors.message,
                  "%ux%u pixels is too large", cinfo.image_width,
                  cinfo.image_height);
    return false;
  }
  switch (cinfo.jpeg_color_space) {
  case JCS_GRAYSCALE:
    cinfo.out_color_space = JCS_GRAYSCALE;
    break;
  case JCS_CMYK:
  case JCS_YCCK:
    cinfo.out_color_space = JCS_CMYK;
    break;
  default:
    cinfo.out_color_space = JCS_RGB;
    break;
  }
  jpeg_start_decompress(&cinfo);
  out.channels = cinfo.output_components;
  out.height = cinfo.output_height;
  out.width = cinfo.output_width;
  const size_t rowBytes = size_t(out.width) * size_t(out.channels);
  out.bytes.resize(rowBytes * size_t(out.height));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.bytes.data() + cinfo.output_scanline * rowBytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

/// CMYK to RGB by removing ink: R = (1 - C)(1 - K) and so on. Adobe's
/// encoder (an APP14 marker) stores the ink inverted, so there R = C K.
DecodedPixels cmykToRgb(const DecodedPixels &in, bool adobeInverted) {
  DecodedPixels out;
  out.channels = 3;
  out.height = in.height;
  out.width = in.width;
  out.bytes.resize(size_t(in.height * in.width) * 3);
  auto product = [](unsigned a, unsigned b) {
    return uint8_t((a * b + 127) / 255);
  };
  for (size_t p = 0; p < size_t(in.height * in.width); ++p) {
    const uint8_t *cmyk = &in.bytes[4 * p];
    unsigned k = adobeInverted ? cmyk[3] : 255u - cmyk[3];
    for (int c = 0; c < 3; ++c)
      out.bytes[3 * p + size_t(c)] =
          product(adobeInverted ? cmyk[c] : 255u - cmyk[c], k);
  }
  return out;
}

Image decodeJpeg(const std::string &path, const std::vector<uint8_t> &file) {
  JpegDecoder decoder;
  DecodedPixels pixels;
  if (!runJpeg(decoder, file, pixels))
    fail(path, std::string("cannot decode JPEG: ") + decoder.errors.message);
  if (pixels.channels == 4)
    return toImage(cmykToRgb(pixels, decoder.cinfo.saw_Adobe_marker));
  return toImage(pixels);
}

struct PngDecoder {
  std::jmp_buf escape;
  char message[256] = {};
  const std::vector<uint8_t> *file = nullptr;
  size_t offset = 0; // of the next byte libpng reads
  png_structp png = nullptr;
  png_infop info = nullptr;

  explicit PngDecoder(const std::vector<uint8_t> &file) : file(&file) {}
  ~PngDecoder() { png_destroy_read_struct(&png, &info, nullptr); }
  PngDecoder(const PngDecoder &) = delete;
  PngDecoder &operator=(const PngDecoder &) = delete;
};

[[noreturn]] void pngFail(png_structp png, png_const_charp message) {
  auto *decoder = static_cast<PngDecoder *>(png_get_error_ptr(png));
  std::snprintf(decoder->message, sizeof decoder->message, "%s", message);
  std::longjmp(decoder->escape, 1);
}

// Warnings (an odd colour profile, a damaged ancillary chunk) leave the
// pixels intact; silent since many threads decode at once.
void pngWarn(png_structp, png_const_charp) {}

void pngRead(png_structp png, png_bytep out, size_t bytes) {
  auto *decoder = static_cast<PngDecoder *>(png_get_io_ptr(png));
  if (bytes > decoder->file->size() - decoder->offset)
    png_error(png, "truncated: the file ends inside a chunk");
  std::memcpy(out, decoder->file->data() + decoder->offset, bytes);
  decoder->offset += bytes;
}

/// Decodes decoder.file into `out` as 8-bit gray or RGB. Returns false with
/// the message in decoder.message when libpng fails.
bool runPng(PngDecoder &decoder, DecodedPixels &out) {
  if (setjmp(decoder.escape))
    return false;
  decoder.png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &decoder, pngFail, pngWarn);
  if (!decoder.png) {
    std::snprintf(decoder.message, sizeof decoder.message, "out of memory");
    return false;
  }
  png_structp png = decoder.png;
  decoder.info = png_create_info_struct(png);
  if (!decoder.info)
    png_error(png, "out of memory");
  png_infop info = decoder.info;
  png_set_read_fn(png, &decoder, pngRead);
  png_read_info(png, info);

  const png_uint_32 width = png_get_image_width(png, info),
                    height = png_get_image_height(png, info);
  if (uint64_t(width) * height > kMaxPixels) {
    char message[64];
    std::snprintf(message, sizeof message, "%ux%u pixels is too large",
                  unsigned(width), unsigned(height));
    png_error(png, message);
  }
  const int colorType = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16)
    png_set_scale_16(png);
  if (colorType == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png);
  if (colorType == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  // Drops alpha channels, and the one palette expansion makes of a tRNS chunk.
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);

  const int channels = png_get_channels(png, info);
  if ((channels != 1 && channels != 3) || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != size_t(width) * size_t(channels))
    png_error(png, "unexpected pixel layout after conversion to 8-bit");
  out.channels = channels;
  out.height = height;
  out.width = width;
  const size_t rowBytes = size_t(width) * size_t(channels);
  out.bytes.resize(rowBytes * height);
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < height; ++y)
      png_read_row(png, out.bytes.data() + y * rowBytes, nullptr);
  png_read_end(png, nullptr);
  return true;
}

Image decodePng(const std::string &path, const std::vector<uint8_t> &file) {
  PngDecoder decoder(file);
  DecodedPixels pixels;
  if (!runPng(decoder, pixels))
    fail(path, std::string("cannot decode PNG: ") + decoder.message);
  return toImage(pixels);
}

} // namespace

Image lap::data::decodeImage(const std::string &path,
                             const std::vector<uint8_t> &file) {
  if (file.size() >= 8 && png_sig_cmp(file.data(), 0, 8) == 0)
    return decodePng(path, file);
  if (file.size() >= 2 && file[0] == 0xFF && file[1] == 0xD8)
    return decodeJpeg(path, file);
  fail(path, "neither a JPEG nor a PNG file (unrecognised signature)");
}

Image lap::data::decodeImageFile(const std::string &path) {
  uint64_t bytes = 0;
  std::ifstream in = lap::platform::openRegularFile(path, &bytes);
  std::vector<uint8_t> file(bytes);
  if (!in.read(reinterpret_cast<char *>(file.data()), std::streamsize(bytes)))
    lap::platform::fail(path,
                        "cannot read " + std::to_string(bytes) + " bytes");
  return decodeImage(path, file);
}

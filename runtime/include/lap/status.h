/*===- lap/status.h - What lap's C entry points return ------------*- C -*-===//
 *
 * Shared by the model ABI (lap/model.h) and the attention entry points
 * (lap/attention.h); each library describes its last error on the calling
 * thread with its own *_last_error().
 *
 *===----------------------------------------------------------------------===*/

#ifndef LAP_STATUS_H
#define LAP_STATUS_H

typedef enum lap_status {
  LAP_OK = 0,
  LAP_INVALID_ARGUMENT = 1, /* null pointer, size out of range */
  LAP_INTERNAL = 2,
} lap_status;

#endif /* LAP_STATUS_H */

// Sizes saturate instead of wrapping: an intermediate beyond 2^48 bytes is
// an error at its op.
func.func @beyond(%x: tensor<?x?x65536xf32>) -> tensor<?x?x65536xf32> {
  // expected-error @+1 {{its result needs more than 2^48 bytes (256 TiB) at batch <= 1073741824 and sequence <= 1073741824}}
  %y = lap.relu2 %x : tensor<?x?x65536xf32>
  %z = lap.relu2 %y : tensor<?x?x65536xf32>
  return %z : tensor<?x?x65536xf32>
}

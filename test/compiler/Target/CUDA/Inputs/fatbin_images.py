"""Prints the images of the fatbin a CUDA model library embeds.

usage: fatbin_images.py MODEL.so

Finds the global lap_gen_cuda_image (nm -S), reads its bytes from the
file (the ELF section that holds it maps its address to a file offset)
and prints one line per image of the fatbin: its kind (elf: machine code,
ptx) and architecture, e.g. "elf sm_90".
"""
import struct
import subprocess
import sys

path = sys.argv[1]
data = open(path, "rb").read()

symbols = subprocess.run(["nm", "-S", path], capture_output=True, text=True,
                         check=True).stdout
address = size = None
for line in symbols.splitlines():
    fields = line.split()
    if len(fields) == 4 and fields[3] == "lap_gen_cuda_image":
        address, size = int(fields[0], 16), int(fields[1], 16)
if address is None:
    sys.exit(f"{path}: no lap_gen_cuda_image")

# 64-bit little-endian ELF: the loaded section whose addresses hold it.
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
offset = None
for i in range(shnum):
    header = shoff + i * shentsize
    flags, = struct.unpack_from("<Q", data, header + 0x08)
    sh_addr, sh_offset, sh_size = struct.unpack_from("<QQQ", data, header + 0x10)
    loaded = flags & 0x2  # SHF_ALLOC: other sections have no addresses
    if loaded and sh_addr <= address < sh_addr + sh_size:
        offset = sh_offset + (address - sh_addr)
if offset is None:
    sys.exit(f"{path}: lap_gen_cuda_image lies in no section")

# A fatbin: magic 0xBA55ED50, version, header size, size of the images; each
# image: kind (1 PTX, 2 ELF), version, header size, payload size, ..., the
# architecture (at 28).
magic, _, header_size, images_size = struct.unpack_from("<IHHQ", data, offset)
if magic != 0xBA55ED50:
    sys.exit(f"{path}: lap_gen_cuda_image is not a fatbin (magic {magic:#x})")
at, end = offset + header_size, offset + header_size + images_size
while at < end:
    kind, _, image_header, payload = struct.unpack_from("<HHIQ", data, at)
    arch, = struct.unpack_from("<I", data, at + 28)
    print({1: "ptx", 2: "elf"}.get(kind, f"kind {kind}"), f"sm_{arch}")
    at += image_header + payload

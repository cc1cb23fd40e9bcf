#!/usr/bin/env python3
"""SASS of zinc's pipelines on NVIDIA, from the pipeline cache data ZINC_PIPELINE_DUMP writes.

On the device machine (README.md here):
    ZINC_PIPELINE_STATS=1 ZINC_PIPELINE_DUMP=$OUT/dump .dev/zinc_X bench -m MODEL -p 0 -n 4 ...
Here, with nvdisasm from Debian's non-free nvidia-cuda-toolkit unpacked (README.md):
    python3 bench/h200/sass.py NVDISASM dump/*.bin      # writes dump/<pipeline>.sass

The NVIDIA 580 driver's cache entry is a header, then a zstd frame; decompressed, a container
("NVDANVVMNVuc") whose word at 0x4c is the code size and at 0x50 its offset; the SM90
instructions start 8 bytes past that offset. Instructions nvdisasm 11.8 does not know are
written as NOPs marked UNKNOWN.
"""
import re
import struct
import subprocess
import sys
import tempfile

NOP = bytes.fromhex('1879000000000000' + '0000000000c00f00')


def code_of(blob: bytes) -> bytes:
    frame = blob.find(b'\x28\xb5\x2f\xfd')
    if frame < 0:
        raise ValueError('no zstd frame')
    raw = subprocess.run(['zstd', '-d', '-q', '-c'], input=blob[frame:], capture_output=True, check=True).stdout
    size, off = struct.unpack_from('<II', raw, 0x4c)
    return raw[off + 8:off + 8 + size]


def disassemble(nvdisasm: str, code: bytes) -> str:
    code = bytearray(code)
    unknown = {}
    with tempfile.NamedTemporaryFile(suffix='.bin') as f:
        for _ in range(8):
            f.seek(0)
            f.truncate()
            f.write(code)
            f.flush()
            out = subprocess.run([nvdisasm, '-b', 'SM90', f.name], capture_output=True, text=True)
            bad = [int(a, 16) for a in re.findall(r'at address (0x[0-9a-f]+)', out.stderr)]
            if not bad:
                break
            for a in bad:
                unknown[a] = code[a:a + 16].hex()
                code[a:a + 16] = NOP
    lines = []
    for line in out.stdout.split('\n'):
        m = re.search(r'/\*([0-9a-f]{4,})\*/', line)
        if m and int(m.group(1), 16) in unknown:
            line += '   // UNKNOWN ' + unknown[int(m.group(1), 16)]
        lines.append(line)
    return '\n'.join(lines)


def main() -> None:
    nvdisasm, paths = sys.argv[1], sys.argv[2:]
    for path in paths:
        code = code_of(open(path, 'rb').read())
        text = disassemble(nvdisasm, code)
        out = re.sub(r'\.bin$', '', path) + '.sass'
        open(out, 'w').write(text)
        print(f'{out}: {len(code)} bytes, {text.count(chr(10))} lines')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Writes the malformed GGUF regression corpus: tests/gguf/malformed/*.gguf and manifest.txt.

One small file per rule of model-spec §1 (and a few more found by fuzzing). Each manifest line is
`<file>|<fragment>`: gguf::File::open must fail with a message containing <fragment>.
Run from anywhere: python3 tests/gguf/make_malformed.py [OUT_DIR]. The output is deterministic.
"""
import os
import struct
import sys

MAGIC = 0x46554747

# GGUF value type ids (model-spec §1.2).
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# ggml type ids used here.
T_F32, T_F16, T_Q4_0, T_Q8_0, T_Q4_K, T_BF16 = 0, 1, 2, 8, 12, 30
BLOCK = {T_F32: (1, 4), T_F16: (1, 2), T_Q4_0: (32, 18), T_Q8_0: (32, 34), T_Q4_K: (256, 144), T_BF16: (1, 2)}


def u32(v): return struct.pack('<I', v & 0xFFFFFFFF)
def i32(v): return struct.pack('<i', v)
def u64(v): return struct.pack('<Q', v & 0xFFFFFFFFFFFFFFFF)
def i64(v): return struct.pack('<q', v)
def f32(v): return struct.pack('<f', v)


def gstr(s, length=None):
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b) if length is None else length) + b


class Kv:
    def __init__(self, key, vtype, payload, key_len=None):
        self.key, self.vtype, self.payload, self.key_len = key, vtype, payload, key_len

    def encode(self):
        return gstr(self.key, self.key_len) + u32(self.vtype) + self.payload


class Ti:
    def __init__(self, name, ne, ttype, offset=0, n_dims=None, name_len=None):
        self.name, self.ne, self.ttype, self.offset = name, list(ne), ttype, offset
        self.n_dims = n_dims  # None: len(ne)
        self.name_len = name_len

    def nbytes(self):
        be, bb = BLOCK[self.ttype]
        n = 1
        for d in self.ne:
            n *= d
        return n // be * bb

    def encode(self):
        out = gstr(self.name, self.name_len) + u32(len(self.ne) if self.n_dims is None else self.n_dims)
        for d in self.ne:
            out += i64(d)
        return out + u32(self.ttype) + u64(self.offset)


def arr(elem, count, body):
    return u32(elem) + u64(count) + body


def align_up(x, a):
    return (x + a - 1) // a * a


class Gguf:
    """A file as parts; build() returns (bytes, offsets of each part) for truncation cases."""

    def __init__(self):
        self.magic, self.version = MAGIC, 3
        self.n_tensors = self.n_kv = None  # None: the real counts
        self.kvs = [
            Kv('general.architecture', STR, gstr('llama')),
            Kv('general.name', STR, gstr('malformed corpus base')),
            Kv('tokenizer.ggml.tokens', ARR, arr(STR, 3, gstr('<unk>') + gstr('a') + gstr('bc'))),
            Kv('tokenizer.ggml.token_type', ARR, arr(I32, 3, i32(2) + i32(1) + i32(1))),
            Kv('test.u32', U32, u32(7)),
            Kv('test.f32', F32, f32(0.5)),
            Kv('test.bool', BOOL, b'\x01'),
            Kv('test.str', STR, gstr('last value')),
        ]
        # The counts are checked against the file size first (a key-value takes >= 13 bytes, a
        # tensor info >= 24), so truncations below cut late keys, after enough bytes for both.
        self.tis = [Ti('a.weight', [8, 2], T_F32), Ti('b.weight', [32, 2], T_Q8_0), Ti('c.bias', [16], T_F16)]
        self.alignment = 32
        self.pack()

    def pack(self):
        off = 0
        for t in self.tis:
            t.offset = off
            off = align_up(off + t.nbytes(), self.alignment)
        self.data_size = off

    def build(self):
        parts = {}
        out = u32(self.magic) + u32(self.version)
        out += i64(len(self.tis) if self.n_tensors is None else self.n_tensors)
        out += i64(len(self.kvs) if self.n_kv is None else self.n_kv)
        parts['header_end'] = len(out)
        for i, kv in enumerate(self.kvs):
            parts['kv%d' % i] = len(out)
            parts['kv%d_type' % i] = len(out) + 8 + len(kv.key.encode() if isinstance(kv.key, str) else kv.key)
            out += kv.encode()
            parts['kv%d_end' % i] = len(out)
        for i, t in enumerate(self.tis):
            parts['ti%d' % i] = len(out)
            out += t.encode()
            parts['ti%d_end' % i] = len(out)
        data_start = align_up(len(out), self.alignment)
        out += b'\0' * (data_start - len(out))
        parts['data'] = data_start
        # Deterministic non-zero data bytes.
        x = 12345
        data = bytearray()
        for _ in range(self.data_size):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            data.append((x >> 16) & 0xFF)
        out += bytes(data)
        return out, parts


CASES = []


def case(name, fragment, content):
    CASES.append((name + '.gguf', fragment, content))


def base():
    return Gguf()


def built(g):
    return g.build()[0]


def truncated(g, part, extra=0):
    data, parts = g.build()
    return data[:parts[part] + extra]


def kv_index(g, key):
    return next(i for i, kv in enumerate(g.kvs) if kv.key == key)


def make_cases():
    valid, parts = base().build()

    # Header: magic, version, counts.
    case('empty', 'not a GGUF file: only 0 bytes', b'')
    case('short-3-bytes', 'not a GGUF file: only 3 bytes', b'GGU')
    case('bad-magic', 'bad magic', b'GGUG' + valid[4:])
    case('magic-big-endian', 'bad magic', b'FUGG' + valid[4:])
    case('ggml-magic', 'bad magic', b'lmgg' + valid[4:])
    for v, frag in [(0, 'unsupported GGUF version 0'), (1, 'GGUF version 1 is not supported'),
                    (4, 'unsupported GGUF version 4'), (0x03000000, 'looks byte-swapped'),
                    (0x02000000, 'looks byte-swapped'), (0xFFFFFFFF, 'unsupported GGUF version 4294967295')]:
        g = base()
        g.version = v
        case('version-%x' % v, frag, built(g))
    case('truncated-version', 'truncated file: version', valid[:6])
    case('truncated-tensor-count', 'truncated file: tensor count', valid[:12])
    case('truncated-metadata-count', 'truncated file: metadata count', valid[:20])
    case('header-only', 'metadata count 8 is impossible for a file of 24 bytes', valid[:24])
    for field, value, frag in [('n_kv', -1, 'metadata count -1 is impossible'),
                               ('n_tensors', -1, 'tensor count -1 is impossible'),
                               ('n_kv', 1 << 62, 'metadata count 4611686018427387904 is impossible'),
                               ('n_tensors', 1 << 62, 'tensor count 4611686018427387904 is impossible'),
                               ('n_kv', -(1 << 63), 'metadata count -9223372036854775808 is impossible'),
                               ('n_tensors', 10 ** 6, 'tensor count 1000000 is impossible')]:
        g = base()
        setattr(g, field, value)
        case('count-%s-%d' % (field.replace('_', ''), value), frag, built(g))

    # Truncation inside each part of the metadata.
    g = base()
    last = len(g.kvs) - 1
    case('truncated-key-length', 'truncated file: metadata key', truncated(g, 'kv%d' % last, 4))
    case('truncated-key-bytes', 'truncated file: metadata key', truncated(g, 'kv%d' % last, 11))
    case('truncated-value-type', 'truncated file: metadata value type', truncated(g, 'kv%d_type' % last, 2))
    case('truncated-string-length', "truncated file: value of key 'test.str'", truncated(g, 'kv%d_type' % last, 4 + 5))
    case('truncated-string-bytes', "truncated file: value of key 'test.str'", truncated(g, 'kv%d_type' % last, 4 + 8 + 3))
    k = kv_index(g, 'test.u32')
    case('truncated-u32-value', "truncated file: value of key 'test.u32'", truncated(g, 'kv%d_type' % k, 4 + 2))
    k = kv_index(g, 'test.bool')
    case('truncated-bool-value', "truncated file: value of key 'test.bool'", truncated(g, 'kv%d_type' % k, 4))
    k = kv_index(g, 'tokenizer.ggml.tokens')
    case('truncated-array-type', "truncated file: value of key 'tokenizer.ggml.tokens'",
         truncated(g, 'kv%d_type' % k, 4 + 2))
    case('truncated-array-count', "truncated file: value of key 'tokenizer.ggml.tokens'",
         truncated(g, 'kv%d_type' % k, 4 + 4 + 3))
    # 3 strings cannot fit in the 10 bytes left: rejected before reading them.
    case('truncated-string-array-count', "key 'tokenizer.ggml.tokens': array of 3 strings does not fit in the 10 bytes",
         truncated(g, 'kv%d_type' % k, 4 + 4 + 8 + 8 + 2))
    # Inside the last string ("bc"), after "<unk>" (13 bytes) and "a" (9 bytes).
    case('truncated-string-array-element', "truncated file: value of key 'tokenizer.ggml.tokens'",
         truncated(g, 'kv%d_type' % k, 4 + 4 + 8 + 13 + 9 + 9))
    k = kv_index(g, 'tokenizer.ggml.token_type')
    case('truncated-numeric-array', "key 'tokenizer.ggml.token_type': array of 3 INT32 elements does not fit",
         truncated(g, 'kv%d_type' % k, 4 + 4 + 8 + 6))

    # Truncation inside each part of the tensor infos, in the padding and in the data.
    case('truncated-tensor-name', 'truncated file: tensor name', truncated(g, 'ti0', 8 + 3))
    case('truncated-tensor-n-dims', 'truncated file: tensor dimension count', truncated(g, 'ti0', 8 + 8 + 1))
    case('truncated-tensor-dims', 'truncated file: tensor dimension', truncated(g, 'ti0', 8 + 8 + 4 + 12))
    case('truncated-tensor-type', 'truncated file: tensor type', truncated(g, 'ti0', 8 + 8 + 4 + 16 + 2))
    case('truncated-tensor-offset', 'truncated file: tensor offset', truncated(g, 'ti1', 8 + 8 + 4 + 16 + 4 + 5))
    data, p = g.build()
    if p['data'] > p['ti2_end']:
        case('truncated-padding', 'the data section would start at', data[:p['ti2_end'] + 1])
    case('truncated-data-first-tensor', "tensor 'a.weight' (64 bytes at offset 0) extends past the end",
         data[:p['data'] + 10])
    case('truncated-data-last-tensor', "tensor 'c.bias' (32 bytes at offset 160) extends past the end",
         data[:len(data) - 20])

    # Strings: lengths beyond the limit or the file.
    g = base()
    g.kvs[-1].key_len = 1 << 40
    case('key-length-2e40', 'metadata key: string length 1099511627776 exceeds the limit of 2^30', built(g))
    g = base()
    g.kvs[1].payload = gstr('x', 1 << 40)
    case('string-length-2e40', "value of key 'general.name': string length 1099511627776 exceeds", built(g))
    g = base()
    g.kvs[1].payload = gstr('x', (1 << 30) + 1)
    case('string-length-2e30-plus-1', 'string length 1073741825 exceeds the limit of 2^30', built(g))
    g = base()
    g.kvs[1].payload = gstr('x', 100000)
    case('string-length-past-end', "truncated file: value of key 'general.name'", built(g))
    g = base()
    g.tis[0].name_len = 1 << 40
    case('tensor-name-length-2e40', 'tensor name: string length 1099511627776 exceeds', built(g))

    # Value and array types.
    for t in (13, 0xFFFFFFFF):
        g = base()
        g.kvs[kv_index(g, 'test.u32')].vtype = t
        case('bad-value-type-%d' % t, "key 'test.u32': value type %d is not a GGUF value type" % t, built(g))
    g = base()
    g.kvs.insert(2, Kv('test.nested', ARR, arr(ARR, 1, arr(U8, 1, b'\x05'))))
    case('array-of-arrays', "key 'test.nested': arrays of arrays are not allowed", built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(13, 1, b'\x05')))
    case('bad-array-element-type', "key 'test.arr': array element type 13 is not a GGUF value type", built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(U32, 1 << 31, u32(1))))
    case('array-count-2e31', "key 'test.arr': array of 2147483648 elements exceeds the limit of 2^30", built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(U8, 1 << 40, b'\x01')))
    case('array-count-2e40', 'array of 1099511627776 elements exceeds the limit', built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(U32, 100000, u32(1) * 4)))
    case('array-past-end', "key 'test.arr': array of 100000 UINT32 elements does not fit", built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(STR, 1000000, gstr('a'))))
    case('string-array-past-end', "key 'test.arr': array of 1000000 strings does not fit", built(g))
    g = base()
    g.kvs.insert(2, Kv('test.arr', ARR, arr(F64, (1 << 30) - 1, b'')))
    case('float64-array-past-end', 'array of 1073741823 FLOAT64 elements does not fit', built(g))

    # Uniqueness.
    g = base()
    g.kvs.append(Kv('test.u32', U32, u32(8)))
    case('duplicate-key', "duplicate metadata key 'test.u32'", built(g))
    g = base()
    g.kvs.append(Kv('test.u32', STR, gstr('other type')))
    case('duplicate-key-other-type', "duplicate metadata key 'test.u32'", built(g))
    g = base()
    g.kvs.append(Kv(b'bad\nkey', U8, b'\x01'))
    g.kvs.append(Kv(b'bad\nkey', U8, b'\x02'))
    case('duplicate-key-control-chars', "duplicate metadata key 'bad?key'", built(g))
    g = base()
    g.tis[2].name = 'a.weight'
    g.pack()
    case('duplicate-tensor-name', "duplicate tensor name 'a.weight'", built(g))

    # Tensor infos.
    g = base()
    g.tis[0].name = 'n' * 64
    case('tensor-name-64-bytes', "is 64 bytes, the limit is 63", built(g))
    g = base()
    g.tis[0].name = ''
    case('tensor-name-empty', 'tensor 0 has an empty name', built(g))
    g = base()
    g.tis[0] = Ti('a.weight', [8, 2, 1, 1, 1], T_F32)
    g.pack()
    case('n-dims-5', "tensor 'a.weight' has 5 dimensions, at most 4 allowed", built(g))
    g = base()
    g.tis[0].n_dims = 0xFFFFFFFF
    case('n-dims-huge', "tensor 'a.weight' has 4294967295 dimensions", built(g))
    g = base()
    g.tis[0].ne = [8, -2]
    case('negative-dim', "tensor 'a.weight' dimension 1 is negative (-2)", built(g))
    g = base()
    g.tis[0].ne = [-(1 << 63), 1]
    case('negative-dim-min', "tensor 'a.weight' dimension 0 is negative", built(g))
    g = base()
    g.tis[0].ne = [1 << 32, 1 << 32]
    case('dim-product-overflow', "tensor 'a.weight' shape [4294967296, 4294967296] overflows the element count",
         built(g))
    g = base()
    g.tis[0].ne = [1 << 31, 1 << 31, 1 << 2]
    case('dim-product-overflow-3d', 'overflows the element count', built(g))
    g = base()
    g.tis[0].ne = [1 << 62]
    case('byte-size-overflow', "tensor 'a.weight' byte size overflows", built(g))
    g = base()
    g.tis[0].ne = [1 << 40]
    case('tensor-huge', "tensor 'a.weight' (4398046511104 bytes at offset 0) extends past the end", built(g))
    for t in (4, 5, 31, 32, 33, 36, 38, 42, 46, 47, 1000, 0xFFFFFFFF):
        g = base()
        g.tis[0].ttype = t
        case('tensor-type-%d' % t, "tensor 'a.weight' has unknown type id %d" % t, built(g))
    g = base()
    g.tis[1].ne = [48, 2]
    case('q8_0-ne0-48', "tensor 'b.weight' of type Q8_0: ne[0] = 48 is not a multiple of the block size 32", built(g))
    g = base()
    g.tis[1] = Ti('b.weight', [128, 2], T_Q4_K)
    g.pack()
    case('q4_k-ne0-128', "of type Q4_K: ne[0] = 128 is not a multiple of the block size 256", built(g))
    g = base()
    g.tis[1].offset = 68
    case('unaligned-offset', "tensor 'b.weight' offset 68 is not a multiple of the alignment 32", built(g))
    g = base()
    g.tis[2].offset = 1 << 20
    case('offset-past-end', "tensor 'c.bias' (32 bytes at offset 1048576) extends past the end", built(g))
    g = base()
    g.tis[2].offset = (1 << 64) - 32
    case('offset-overflow', "tensor 'c.bias' (32 bytes at offset 18446744073709551584) extends past the end",
         built(g))

    # Alignment.
    for value, frag in [(0, 'general.alignment 0 is not a power of two'),
                        (3, 'general.alignment 3 is not a power of two'),
                        (48, 'general.alignment 48 is not a power of two'),
                        (0xFFFFFFFF, 'general.alignment 4294967295 is not a power of two')]:
        g = base()
        g.kvs.insert(0, Kv('general.alignment', U32, u32(value)))
        case('alignment-%d' % value, frag, built(g))
    for vt, payload, tname in [(U64, u64(32), 'UINT64'), (I32, i32(32), 'INT32'), (STR, gstr('32'), 'STRING'),
                               (U16, struct.pack('<H', 32), 'UINT16'), (ARR, arr(U32, 1, u32(32)), 'ARRAY')]:
        g = base()
        g.kvs.insert(0, Kv('general.alignment', vt, payload))
        case('alignment-type-%s' % tname.lower(), 'general.alignment has type %s, expected UINT32' % tname, built(g))
    g = base()
    g.kvs.insert(0, Kv('general.alignment', U32, u32(64)))
    case('alignment-64-offsets-32', "tensor 'c.bias' offset 160 is not a multiple of the alignment 64", built(g))
    g = base()
    g.kvs.insert(0, Kv('general.alignment', U32, u32(1 << 31)))
    g.tis = g.tis[:1]  # offset 0 is aligned to anything; the data section would start 2 GiB in
    case('alignment-2e31', 'the data section would start at 2147483648, past the end', built(g))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'malformed')
    os.makedirs(out_dir, exist_ok=True)
    make_cases()
    names = set()
    lines = ['# Malformed GGUF files and a fragment of the error each must produce (file|fragment).',
             '# Generated by tests/gguf/make_malformed.py; do not edit by hand.']
    for name, fragment, content in CASES:
        assert name not in names, name
        assert '|' not in fragment and '\n' not in fragment
        names.add(name)
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(content)
        lines.append('%s|%s' % (name, fragment))
    with open(os.path.join(out_dir, 'manifest.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    # The valid file all cases derive from (every strict prefix of it must be rejected).
    os.makedirs(os.path.join(out_dir, 'valid'), exist_ok=True)
    with open(os.path.join(out_dir, 'valid', 'base.gguf'), 'wb') as f:
        f.write(base().build()[0])
    print('wrote %d files to %s' % (len(CASES), out_dir))


if __name__ == '__main__':
    main()

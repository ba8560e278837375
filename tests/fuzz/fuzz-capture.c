/*
 * libFuzzer driver for libsbxsh's captures (lib/sbxsh.c): what a sandbox command writes is
 * any bytes, in any pieces, and a result keeps its head and tail cut at UTF-8 characters.
 * The first two bytes choose the cap (0-1023) and the piece size; the rest is the output.
 * Checks: the kept bytes are at most the cap, the head a prefix and the tail a suffix of the
 * output, the total counted, everything kept when nothing is truncated, and valid UTF-8
 * cut between characters at both ends of the gap.
 */
#include "lib/sbxsh.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : s[i] >= 0xf8 ? 0 : s[i] >= 0xf0 ? 4 : s[i] >= 0xe0 ? 3
                   : s[i] >= 0xc0 ? 2 : 0;
        if (!len || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if (!utf8_cont(s[i + k]))
                return false;
        i += len;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    capture k;
    kept out;
    size_t cap, piece;

    if (size < 2)
        return 0;
    cap = ((size_t)data[0] << 2 | data[1] >> 6) & 1023;
    piece = (data[1] & 63) + 1;
    data += 2;
    size -= 2;
    if (capture_init(&k, cap) < 0)
        abort();
    for (size_t off = 0; off < size; off += piece)
        if (capture_add(&k, (const char *)data + off, size - off < piece ? size - off : piece) < 0)
            abort();
    if (capture_finish(&k, &out) < 0)
        abort();
    if (out.total != size || out.len > cap || out.head_len > out.len)
        abort();
    if (memcmp(out.data, data, out.head_len) != 0)
        abort();
    if (memcmp(out.data + out.head_len, data + size - (out.len - out.head_len),
               out.len - out.head_len) != 0)
        abort();
    if (!out.truncated && (out.len != size || memcmp(out.data, data, size) != 0))
        abort();
    if (out.truncated && out.len == size)
        abort();
    if (out.truncated && valid_utf8(data, size)) {
        /* valid UTF-8 is cut between characters, at both ends of the gap */
        if (utf8_cont(data[out.head_len]) ||
            (out.len > out.head_len && utf8_cont((unsigned char)out.data[out.head_len])))
            abort();
    }
    free(out.data);
    capture_free(&k);
    return 0;
}

// SHA-256 (FIPS 180-4) and CRC-32 (IEEE 802.3, as in zip, gzip and PNG), incremental, so a file
// can be hashed in chunks.
#ifndef CHECKSUM_CHECKSUMS_H
#define CHECKSUM_CHECKSUMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t length;  // bytes hashed so far
    uint8_t block[64];
    size_t used;      // bytes waiting in `block`
} sha256_ctx;

void sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const void *data, size_t length);
void sha256_final(sha256_ctx *ctx, uint8_t digest[32]);

// Start with crc = 0; feed every chunk through crc32_update; the result is the checksum.
uint32_t crc32_update(uint32_t crc, const void *data, size_t length);

#endif

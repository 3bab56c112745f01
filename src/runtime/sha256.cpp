// Written from FIPS 180-4, sections 4.1.2 (functions), 4.2.2 (constants), 5.1.1 (padding),
// 5.3.3 (initial hash) and 6.2.2 (the hash computation).
#include "runtime/sha256.h"

#include <array>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace coil {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::array<uint32_t, 8> kInitialHash = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
uint32_t ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
uint32_t maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
uint32_t big_sigma0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
uint32_t big_sigma1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
uint32_t small_sigma0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
uint32_t small_sigma1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

using Block = std::array<uint8_t, 64>;

// One 512-bit block folded into the running hash (6.2.2, steps 1 to 4).
void compress(std::array<uint32_t, 8> &h, const Block &block) {
  std::array<uint32_t, 64> w{};
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t(block[4 * t]) << 24 | uint32_t(block[4 * t + 1]) << 16 | uint32_t(block[4 * t + 2]) << 8 |
           uint32_t(block[4 * t + 3]);
  for (int t = 16; t < 64; ++t) w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];

  auto [a, b, c, d, e, f, g, hh] = h;
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 = hh + big_sigma1(e) + ch(e, f, g) + kRoundConstants[t] + w[t];
    uint32_t t2 = big_sigma0(a) + maj(a, b, c);
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  const std::array<uint32_t, 8> working = {a, b, c, d, e, f, g, hh};
  for (int i = 0; i < 8; ++i) h[i] += working[i];
}

Block block_at(std::string_view data, size_t offset) {
  Block block{};
  for (size_t i = 0; i < 64; ++i) block[i] = uint8_t(data[offset + i]);
  return block;
}

// The message's tail: its last partial block, a 1 bit, zeros, and the length in bits as a
// 64-bit big-endian number (5.1.1); one or two blocks.
std::string padded_tail(std::string_view data) {
  size_t full = data.size() / 64 * 64;
  std::string tail(data.substr(full));
  tail.push_back(char(0x80));
  while (tail.size() % 64 != 56) tail.push_back('\0');
  uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 7; i >= 0; --i) tail.push_back(char(uint8_t(bits >> (8 * i))));
  return tail;
}

#if defined(__x86_64__)
// The same 64 rounds with the SHA extensions (SHA-NI: sha256rnds2 does two rounds,
// sha256msg1/msg2 the message schedule), about ten times the speed of compress(): the
// cache hashes every file of an entry before using it, and a precompiled header is
// tens of MB. The state lives as ABEF and CDGH, the order sha256rnds2 wants.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_with_sha_extensions(std::array<uint32_t, 8> &h,
                                                                                 const char *data, size_t blocks) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(&h[0])), 0xB1);  // CDAB
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(&h[4])), 0x1B);
  __m128i abef = _mm_alignr_epi8(dcba, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, dcba, 0xF0);
  for (size_t b = 0; b < blocks; ++b, data += 64) {
    const __m128i abef_before = abef, cdgh_before = cdgh;
    __m128i w[4];  // words 4g..4g+3 of the schedule for round group g, in w[g % 4]
    for (int g = 0; g < 16; ++g) {
      if (g < 4) w[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(data + 16 * g)), byte_swap);
      __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i *>(&kRoundConstants[4 * g]));
      __m128i msg = _mm_add_epi32(w[g % 4], k);
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);
      if (g >= 3 && g < 15) {  // words of group g + 1 from those of g - 3 .. g
        __m128i next = _mm_add_epi32(w[(g + 1) % 4], _mm_alignr_epi8(w[g % 4], w[(g + 3) % 4], 4));
        w[(g + 1) % 4] = _mm_sha256msg2_epu32(next, w[g % 4]);
      }
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(msg, 0x0E));
      if (g >= 1 && g < 13) w[(g + 3) % 4] = _mm_sha256msg1_epu32(w[(g + 3) % 4], w[g % 4]);
    }
    abef = _mm_add_epi32(abef, abef_before);
    cdgh = _mm_add_epi32(cdgh, cdgh_before);
  }
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(&h[0]), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(&h[4]), _mm_alignr_epi8(dchg, feba, 8));
}

// CPUID leaf 7's EBX bit 29 (SHA), leaf 1's ECX bits 19 (SSE4.1) and 9 (SSSE3); asked
// directly, since not every compiler's __builtin_cpu_supports knows "sha".
bool has_sha_extensions() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)) || !(c & (1u << 9))) return false;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
  }();
  return has;
}
#endif

// `blocks` whole blocks of 64 bytes from `data` folded into the running hash.
void compress_blocks(std::array<uint32_t, 8> &h, std::string_view data, size_t blocks) {
#if defined(__x86_64__)
  if (has_sha_extensions()) return compress_with_sha_extensions(h, data.data(), blocks);
#endif
  for (size_t i = 0; i < blocks; ++i) compress(h, block_at(data, 64 * i));
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::array<uint32_t, 8> h = kInitialHash;
  compress_blocks(h, data, data.size() / 64);
  std::string tail = padded_tail(data);
  compress_blocks(h, tail, tail.size() / 64);

  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint32_t word : h)
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 0xf]);
  return out;
}

}  // namespace coil

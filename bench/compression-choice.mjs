// Which node:zlib codec for blobs (docs/ARCHITECTURE.md, "Blobs"): ratio and speed on source files.
// Run: node bench/compression-choice.mjs node_modules
import zlib from "node:zlib";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
const files = [];
function walk(d) {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.(ts|js|mjs|json|md)$/.test(e.name)) {
      const s = statSync(p).size;
      if (s > 200 && s < 200_000) files.push(p);
    }
  }
}
walk(process.argv[2]);
files.sort();
const sample = files.filter((_, i) => i % Math.max(1, Math.floor(files.length / 2000)) === 0).slice(0, 2000);
const bufs = sample.map((f) => readFileSync(f));
const total = bufs.reduce((a, b) => a + b.length, 0);
const B = zlib.constants;
const algos = {
  "brotli q1": [
    (b) =>
      zlib.brotliCompressSync(b, { params: { [B.BROTLI_PARAM_QUALITY]: 1, [B.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    zlib.brotliDecompressSync,
  ],
  "brotli q4": [
    (b) =>
      zlib.brotliCompressSync(b, { params: { [B.BROTLI_PARAM_QUALITY]: 4, [B.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    zlib.brotliDecompressSync,
  ],
  "brotli q6": [
    (b) =>
      zlib.brotliCompressSync(b, { params: { [B.BROTLI_PARAM_QUALITY]: 6, [B.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    zlib.brotliDecompressSync,
  ],
  "brotli q9": [
    (b) =>
      zlib.brotliCompressSync(b, { params: { [B.BROTLI_PARAM_QUALITY]: 9, [B.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    zlib.brotliDecompressSync,
  ],
  "gzip 1": [(b) => zlib.gzipSync(b, { level: 1 }), zlib.gunzipSync],
  "gzip 6": [(b) => zlib.gzipSync(b, { level: 6 }), zlib.gunzipSync],
  "deflate-raw 1": [(b) => zlib.deflateRawSync(b, { level: 1 }), zlib.inflateRawSync],
  "deflate-raw 6": [(b) => zlib.deflateRawSync(b, { level: 6 }), zlib.inflateRawSync],
  "deflate-raw 9": [(b) => zlib.deflateRawSync(b, { level: 9 }), zlib.inflateRawSync],
};
const median = bufs.map((b) => b.length).sort((a, b) => a - b)[bufs.length >> 1];
console.log(`${bufs.length} files, ${(total / 1e6).toFixed(2)} MB, median ${median} B`);
for (const [name, [c, d]] of Object.entries(algos)) {
  for (const b of bufs.slice(0, 50)) d(c(b)); // warm
  let out = 0;
  const t0 = process.hrtime.bigint();
  const comp = bufs.map((b) => c(b));
  const t1 = process.hrtime.bigint();
  for (const x of comp) out += x.length;
  const t2 = process.hrtime.bigint();
  for (const x of comp) d(x);
  const t3 = process.hrtime.bigint();
  const cms = Number(t1 - t0) / 1e6,
    dms = Number(t3 - t2) / 1e6;
  const mbps = (ms) => (total / 1e6 / (ms / 1000)).toFixed(0).padStart(4);
  const perFile = ((cms * 1000) / bufs.length).toFixed(0);
  console.log(
    `${name.padEnd(14)} ratio ${(out / total).toFixed(3)}  compress ${mbps(cms)} MB/s  ` +
      `decompress ${mbps(dms)} MB/s  per-file compress ${perFile} µs`,
  );
}

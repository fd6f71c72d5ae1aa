// Writes <file>.gz and <file>.br beside every compressible file of a console build larger than
// 1 KiB, so the gateway serves them compressed without compressing per request. Byte-for-byte
// deterministic (gzip level 9 with no name and mtime 0, brotli quality 11), so check-dist's
// comparison with the committed build stays exact.
//
//   node compress.mjs <dist directory>
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { extname, join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const compressible = new Set([".js", ".css", ".html", ".svg", ".json", ".txt", ".map"]);
const minBytes = 1024;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      walk(path);
      continue;
    }
    if (!compressible.has(extname(name))) continue;
    const data = readFileSync(path);
    if (data.length <= minBytes) continue;
    writeFileSync(`${path}.gz`, gzipSync(data, { level: 9 }));
    writeFileSync(
      `${path}.br`,
      brotliCompressSync(data, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
        },
      }),
    );
  }
}

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node compress.mjs <dist directory>");
  process.exit(2);
}
walk(dir);

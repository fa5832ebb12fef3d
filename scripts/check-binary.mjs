// Prints what the built addon needs and weighs: its size and, on Linux, the highest
// GLIBC_ symbol version it references (read from the file, no binutils needed). Fails
// when a Linux glibc build needs more than glibc 2.17 (what the napi-rs cross toolchain
// targets, so the binary loads on old distributions), and when any build weighs more than
// 8.5 MB (8,500,000 bytes). Checks the .node files in the project root, or the files and
// folders (searched recursively: the release's downloaded artifacts) given as arguments.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ROOT } from './lib/python-env.mjs';

const MAX_GLIBC = [2, 17];
const MAX_BYTES = 8_500_000;
const found = (path) =>
  statSync(path).isDirectory()
    ? readdirSync(path, { recursive: true })
        .filter((f) => f.endsWith('.node'))
        .map((f) => join(path, f))
    : [path];
const args = process.argv.slice(2);
const binaries = args.length
  ? args.flatMap(found)
  : readdirSync(ROOT)
      .filter((f) => f.endsWith('.node'))
      .map((f) => join(ROOT, f));
if (binaries.length === 0) throw new Error(`no .node in ${args.length ? args.join(', ') : 'the project root: build first'}`);
let failed = false;
for (const path of binaries) {
  const file = basename(path);
  const bytes = readFileSync(path);
  const versions = [...new Set(bytes.toString('latin1').match(/GLIBC_\d+\.\d+(\.\d+)?/g) ?? [])]
    .map((v) => v.slice(6).split('.').map(Number))
    .sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] ?? 0) - (b[2] ?? 0));
  const highest = versions.at(-1);
  const fileBytes = bytes.length;
  const size = (fileBytes / 1e6).toFixed(2);
  console.log(`${args.length ? path : file}: ${size} MB; highest GLIBC_ symbol version: ${highest ? highest.join('.') : 'none'}`);
  if (file.includes('linux') && file.includes('gnu') && highest && (highest[0] > MAX_GLIBC[0] || (highest[0] === MAX_GLIBC[0] && highest[1] > MAX_GLIBC[1]))) {
    console.log(`  needs glibc ${highest.join('.')}, more than ${MAX_GLIBC.join('.')}: build with --use-napi-cross (npm run build)`);
    failed = true;
  }
  if (fileBytes > MAX_BYTES) {
    console.log(`  ${fileBytes} bytes, more than ${MAX_BYTES}: see the release profile in Cargo.toml`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);

// `npm run package`: builds this machine's target for release (a rebuild is quick when
// `npm install` already built it) and writes installable tarballs into dist/: the main
// package (no binary: JavaScript loader, typings, CLI) and this platform's package (the
// binary alone), as `npm pack` makes them. `npm install dist/*.tgz` in an empty app then
// installs a working addon without a Rust toolchain. Prints each step's time and sizes.
// `--dest <folder>` writes the tarballs there instead of dist/. The platform package is
// packed from a staging copy of npm/<platform>/ (its package.json and README, the binary
// and LICENSE), so the source tree is never written to and two runs do not collide.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { familySync } from './lib/libc.mjs';
import { ROOT } from './lib/python-env.mjs';

const started = Date.now();
const step = (what) => console.log(`[package] ${what} (+${((Date.now() - started) / 1000).toFixed(1)} s)`);
// Windows: Node spawns npm.cmd only through a shell.
const run = (command, args, cwd = ROOT) =>
  execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', shell: process.platform === 'win32' && command === 'npm' });
const npm = 'npm';

const { napi } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const { values: args } = parseArgs({ options: { dest: { type: 'string' } } });
// napi-rs's platform names: linux-x64-gnu / linux-x64-musl, win32-x64-msvc, darwin-arm64.
const abi = { linux: familySync() === 'musl' ? '-musl' : '-gnu', win32: '-msvc' }[process.platform] ?? '';
const platform = `${process.platform}-${process.arch}${abi}`;
const binary = `${napi.binaryName}.${platform}.node`;
const platformDir = join(ROOT, 'npm', platform);
if (!existsSync(join(platformDir, 'package.json'))) throw new Error(`no platform package npm/${platform} (napi create-npm-dirs)`);

if (process.env.MONGO_SEQUENCE_SKIP_BUILD !== '1') {
  step('building the release addon');
  run(process.execPath, [join(ROOT, 'scripts', 'build.mjs')]);
}
if (!existsSync(join(ROOT, binary))) throw new Error(`${binary} was not built`);
const staging = mkdtempSync(join(tmpdir(), `mseq-${platform}-`));
step(`staging npm/${platform} with ${binary} (${(statSync(join(ROOT, binary)).size / 1e6).toFixed(1)} MB)`);
for (const file of ['package.json', 'README.md']) copyFileSync(join(platformDir, file), join(staging, file));
copyFileSync(join(ROOT, binary), join(staging, binary));
copyFileSync(join(ROOT, 'LICENSE'), join(staging, 'LICENSE'));

const dist = args.dest ? resolve(args.dest) : join(ROOT, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
try {
  for (const dir of [ROOT, staging]) {
    const [packed] = JSON.parse(run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dist], dir));
    step(`packed ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1e6).toFixed(2)} MB (${(packed.unpackedSize / 1e6).toFixed(2)} MB unpacked)`);
  }
} finally {
  rmSync(staging, { recursive: true, force: true });
}
step(`done: npm install ${args.dest ? dist : 'dist'}/*.tgz`);

// `npm run package`: builds this machine's target for release (a rebuild is quick when
// `npm install` already built it) and writes installable tarballs into dist/: the main
// package (no binary: JavaScript loader, typings, CLI) and this platform's package (the
// binary alone), as `npm pack` makes them. `npm install dist/*.tgz` in an empty app then
// installs a working addon without a Rust toolchain. Prints each step's time and sizes.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib/python-env.mjs';

const started = Date.now();
const step = (what) => console.log(`[package] ${what} (+${((Date.now() - started) / 1000).toFixed(1)} s)`);
// Windows: Node spawns npm.cmd only through a shell.
const run = (command, args, cwd = ROOT) =>
  execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', shell: process.platform === 'win32' && command === 'npm' });
const npm = 'npm';

const { napi } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const platform = `${process.platform}-${process.arch}${process.platform === 'linux' ? '-gnu' : process.platform === 'win32' ? '-msvc' : ''}`;
const binary = `${napi.binaryName}.${platform}.node`;
const platformDir = join(ROOT, 'npm', platform);
if (!existsSync(join(platformDir, 'package.json'))) throw new Error(`no platform package npm/${platform} (napi create-npm-dirs)`);

if (process.env.MONGO_SEQUENCE_SKIP_BUILD !== '1') {
  step('building the release addon');
  run(process.execPath, [join(ROOT, 'scripts', 'build.mjs')]);
}
if (!existsSync(join(ROOT, binary))) throw new Error(`${binary} was not built`);
step(`copying ${binary} (${(statSync(join(ROOT, binary)).size / 1e6).toFixed(1)} MB) into npm/${platform}`);
copyFileSync(join(ROOT, binary), join(platformDir, binary));

const dist = join(ROOT, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist);
for (const dir of [ROOT, platformDir]) {
  const [packed] = JSON.parse(run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dist], dir));
  step(`packed ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1e6).toFixed(2)} MB (${(packed.unpackedSize / 1e6).toFixed(2)} MB unpacked)`);
}
rmSync(join(platformDir, binary));
step('done: npm install dist/*.tgz');

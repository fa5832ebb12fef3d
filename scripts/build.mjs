// `npm run build` (and before `npm run demo` and `npm test`): the release addon for this machine. On Linux x64 and
// arm64 (glibc) it links with the napi-rs cross toolchain's glibc 2.17 sysroot
// (`--use-napi-cross`), so the binary loads on old distributions too (Debian 11, RHEL 8,
// Amazon Linux 2); elsewhere it is a plain build. Extra arguments are passed on.
import { spawnSync } from 'node:child_process';
import { familySync } from './lib/libc.mjs';

const portableLinux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch) && familySync() === 'glibc';
const args = ['napi', 'build', '--platform', '--release', ...(portableLinux ? ['--use-napi-cross'] : []), ...process.argv.slice(2)];
console.log(`[build] npx ${args.join(' ')}`);
const started = Date.now();
// Windows: Node refuses to spawn a .cmd (npx.cmd) without a shell, so npx runs through one
// there (the arguments hold no spaces or shell characters).
const run = spawnSync('npx', args, { stdio: 'inherit', shell: process.platform === 'win32' });
console.log(`[build] ${run.status === 0 ? 'done' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(run.status ?? 1);

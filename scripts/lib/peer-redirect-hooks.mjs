// The rule behind scripts/lib/peer-redirect.mjs, and the module.register() hooks that
// apply it to `import` on Node versions without module.registerHooks().
//
// `peers` maps a package name the project's files ask for to the folder of the copy to
// load instead: { 'mongodb-v6': '<dir>/node_modules/mongodb', … }. `mongodb-v6/package.json`
// then becomes `mongodb/package.json` resolved from `<dir>`, honouring the copy's
// `exports`. A request made from inside a node_modules folder (mongoose asking for
// `mongodb`, the copies' own files) is left alone: each copy keeps the dependencies its
// own package.json asks for.
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Where `specifier`, asked for by the module at `parentURL`, must be resolved instead:
 * `{ specifier, base }` (resolve the new specifier from the folder `base`), or null to
 * leave it alone.
 */
export function redirect(peers, specifier, parentURL) {
  if (!parentURL?.startsWith('file:')) return null;
  const [name, ...rest] = specifier.split('/');
  if (!Object.hasOwn(peers, name)) return null;
  const parent = fileURLToPath(parentURL);
  if (parent.split(/[\\/]/).includes('node_modules')) return null;
  const folder = peers[name];
  return { specifier: [basename(folder), ...rest].join('/'), base: dirname(dirname(folder)) };
}

/**
 * The URL of a (made-up) module in `base`'s node_modules folder: resolving from there finds
 * the copy, and `redirect` leaves requests made from there alone.
 */
export function parentIn(base) {
  return pathToFileURL(join(base, 'node_modules', 'peer-redirect.js')).href;
}

/** The file `require` loads for a redirected request (see `redirect`). */
export function requireTarget(target) {
  return createRequire(parentIn(target.base)).resolve(target.specifier);
}

let peers = {};

export function initialize(data) {
  peers = data;
}

export async function resolve(specifier, context, nextResolve) {
  const target = redirect(peers, specifier, context.parentURL);
  if (!target) return nextResolve(specifier, context);
  return nextResolve(target.specifier, { ...context, parentURL: parentIn(target.base) });
}

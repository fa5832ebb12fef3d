// `node --import <this file>` (or in NODE_OPTIONS, so child processes get it too): the
// project's own files that import or require `mongodb`, `mongodb-v6`, `mongoose` or
// `mongoose-v8` (or a subpath such as `mongodb/package.json`) get the copies named by
// MONGO_SEQUENCE_PEERS instead of the pinned ones in node_modules. MONGO_SEQUENCE_PEERS is
// JSON, { "<name>": "<package folder>" }; scripts/lib/newest-peers.mjs installs the copies
// and sets it. Without it this file does nothing. See scripts/lib/peer-redirect-hooks.mjs
// for the rule.
import { existsSync } from 'node:fs';
import module, { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { redirect, parentIn, requireTarget } from './peer-redirect-hooks.mjs';

const peers = process.env.MONGO_SEQUENCE_PEERS ? JSON.parse(process.env.MONGO_SEQUENCE_PEERS) : null;

if (peers) {
  // A missing copy would otherwise be looked for further up, ending in the pinned one.
  for (const [name, folder] of Object.entries(peers)) {
    if (!existsSync(join(folder, 'package.json'))) throw new Error(`MONGO_SEQUENCE_PEERS: no ${name} in ${folder}`);
  }
  // `require` and `require.resolve`, on every Node version (Node 22's `require.resolve`
  // does not run module.registerHooks() hooks).
  const Module = createRequire(import.meta.url)('node:module');
  const resolveFilename = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, isMain, options) {
    const from = parent?.filename ? pathToFileURL(parent.filename).href : undefined;
    const target = redirect(peers, request, from);
    return target ? requireTarget(target) : resolveFilename.call(this, request, parent, isMain, options);
  };
  // `import`: module.registerHooks() where Node has it (22.15, 23.5 and later), else
  // module.register(). A `require` reaching the hook is left to the resolver above.
  if (typeof module.registerHooks === 'function') {
    module.registerHooks({
      resolve(specifier, context, nextResolve) {
        const target = context.conditions?.includes('require') ? null : redirect(peers, specifier, context.parentURL);
        if (!target) return nextResolve(specifier, context);
        return nextResolve(target.specifier, { ...context, parentURL: parentIn(target.base) });
      },
    });
  } else {
    module.register('./peer-redirect-hooks.mjs', { parentURL: import.meta.url, data: peers });
  }
}

// Which copies of the Node driver and of mongoose the tests load: the pinned
// devDependencies, or, in the newest-versions pass of `npm test` (MONGO_SEQUENCE_PEERS set,
// scripts/lib/newest-peers.mjs), the newest published ones installed at test time. The
// test names give each version as the tests resolve it; `import` and `require` must load
// the same copy, and each mongoose must use the mongodb installed for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../..', import.meta.url));
const peers = process.env.MONGO_SEQUENCE_PEERS ? JSON.parse(process.env.MONGO_SEQUENCE_PEERS) : null;
const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const where = (path) => relative(root, path).split(sep).join('/');

for (const name of ['mongodb', 'mongodb-v6', 'mongoose', 'mongoose-v8']) {
  const manifest = require.resolve(`${name}/package.json`);
  const { version } = require(manifest);
  const folder = dirname(manifest);
  test(`${name} is ${version} from ${where(folder)}`, async () => {
    if (peers) {
      assert.equal(realpathSync(folder), realpathSync(peers[name]), 'the newest copy, not the pinned one');
    } else {
      assert.equal(realpathSync(folder), realpathSync(join(root, 'node_modules', name)));
      assert.equal(version, devDependencies[name].replace(/^npm:[^@]+@/, ''), 'node_modules holds the pinned version');
    }
    const main = require.resolve(name);
    assert.ok(main.startsWith(folder + sep), `require('${name}') loads ${main}`);
    assert.equal(fileURLToPath(import.meta.resolve(name)), main, `import '${name}' loads what require does`);
    assert.equal((await import(name)).default, require(name));
  });
}

for (const name of ['mongoose', 'mongoose-v8']) {
  const own = createRequire(require.resolve(`${name}/package.json`));
  const manifest = own.resolve('mongodb/package.json');
  const { version } = own('mongodb/package.json');
  const asks = own('./package.json').dependencies.mongodb;
  test(`${name} uses mongodb ${version} (it asks for ${asks}) from ${where(dirname(manifest))}`, () => {
    const base = peers ? dirname(dirname(peers[name])) : root;
    assert.ok(manifest.startsWith(join(base, 'node_modules') + sep), `installed with it: ${manifest}`);
    assert.equal(require(name).mongo.MongoClient, own('mongodb').MongoClient);
  });
}

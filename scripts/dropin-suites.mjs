#!/usr/bin/env node
// Runs another plugin's own test suite against this package's drop-in for it, on a test
// server (or MONGODB_URI). The suites are not published on npm and are not part of this
// repository: check the plugin's repository out, install its dependencies there, then
//
//   node scripts/dropin-suites.mjs typegoose <checkout of typegoose/auto-increment>
//
// `typegoose`: @typegoose/auto-increment's jest suite (test/basic.test.ts). Its import of
// `../src/autoIncrement` is mapped to `lib/dropins/typegoose.js`; its global set-up (which
// starts mongodb-memory-server) is replaced by one that points the suite's own
// configuration (`Memory: false`, IP and port) at the server; its tests run as they are,
// with their snapshots, in band. The checkout needs `npm install --ignore-scripts` (no
// mongod download: the suite uses the server given here). Exits with jest's status.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './lib/test-server.mjs';
import { hostsOf } from '../__test__/fixtures/uri.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const SUITES = {
  typegoose: {
    dropin: join(ROOT, 'lib/dropins/typegoose.js'),
    /** The jest configuration: theirs, with the drop-in and the server swapped in. */
    jestConfig(checkout, work) {
      const theirs = JSON.parse(readFileSync(join(checkout, 'jest.config.json'), 'utf8'));
      return {
        ...theirs,
        rootDir: checkout,
        moduleNameMapper: { '^\\.\\./src/autoIncrement$': this.dropin },
        globalSetup: join(work, 'global-setup.cjs'),
        globalTeardown: join(work, 'global-teardown.cjs'),
      };
    },
    /** Files the configuration names: the suite's configuration file, a set-up without mongodb-memory-server. */
    write(work, { host, port, dbName }) {
      writeFileSync(join(work, 'config.json'), JSON.stringify({ Memory: false, DataBase: dbName, Port: port, IP: host, Auth: { DB: '', User: '', Passwd: '' } }));
      const drop = `
const { MongoClient } = require(require.resolve('mongodb', { paths: [process.cwd()] }));
async function drop() {
  const client = new MongoClient(process.env.MONGO_URI + '/?directConnection=true');
  try { await client.db(${JSON.stringify(dbName)}).dropDatabase(); } finally { await client.close(); }
}`;
      writeFileSync(join(work, 'global-setup.cjs'), `${drop}\nmodule.exports = async () => { process.env.MONGO_URI = ${JSON.stringify(`mongodb://${host}:${port}`)}; await drop(); };\n`);
      writeFileSync(join(work, 'global-teardown.cjs'), `${drop}\nmodule.exports = async () => { await drop(); };\n`);
    },
  },
};

const [name, checkoutArg] = process.argv.slice(2);
const suite = SUITES[name];
if (!suite || !checkoutArg) {
  console.error(`usage: dropin-suites.mjs <${Object.keys(SUITES).join('|')}> <checkout of the plugin's repository>`);
  process.exit(2);
}
const checkout = resolve(checkoutArg);
const jest = join(checkout, 'node_modules/jest/bin/jest.js');
if (!existsSync(jest)) {
  console.error(`${checkout} has no node_modules/jest: run npm install --ignore-scripts there first`);
  process.exit(2);
}

const server = await startServer({ kind: process.env.MONGO_SEQUENCE_SERVER || 'mongoeco' });
const work = mkdtempSync(join(tmpdir(), `dropin-suite-${name}-`));
let status = 1;
try {
  const [address] = hostsOf(server.uri);
  const at = address.lastIndexOf(':');
  suite.write(work, { host: address.slice(0, at), port: Number(address.slice(at + 1)), dbName: `dropin_suite_${name}` });
  writeFileSync(join(work, 'jest.config.json'), JSON.stringify(suite.jestConfig(checkout, work)));
  const run = spawnSync(process.execPath, [jest, '--config', join(work, 'jest.config.json'), '--ci', '--runInBand'], {
    cwd: checkout,
    stdio: 'inherit',
    env: { ...process.env, CONFIG: join(work, 'config.json') },
  });
  status = run.status ?? 1;
} finally {
  rmSync(work, { recursive: true, force: true });
  await server.stop?.();
}
process.exit(status);

#!/usr/bin/env node
// Runs another plugin's own test suite against this package's drop-in for it, on a test
// server (or MONGODB_URI). The suites are not published on npm and are not part of this
// repository: check the plugin's repository out, install what the suite needs, then
//
//   node scripts/dropin-suites.mjs <suite> <checkout> [node_modules with its runner]
//
// `typegoose`: @typegoose/auto-increment's jest suite (test/basic.test.ts), with the
// checkout's own dependencies (`npm install --ignore-scripts` there: no mongod download).
// Its import of `../src/autoIncrement` is mapped to `lib/dropins/typegoose.js`; its global
// set-up (which starts mongodb-memory-server) is replaced by one that points the suite's
// own configuration (`Memory: false`, IP and port) at the server.
//
// `plugin-autoinc`: mongoose-plugin-autoinc's jest suite (src/__tests__/), written for
// jest 23, Babel 6 and mongoose 5. It runs with the jest (≥ 29), ts-jest and mongoose
// of the third argument (the typegoose checkout's node_modules will do), its `import`s
// compiled by ts-jest, `..` mapped to `lib/dropins/plugin-autoinc.js`, and shims written
// here for what its tests take from their time: mongodb-memory-server (the server's URI
// instead), mongoose 5's connection options (dropped) and thenable connections, driver
// 3's `ensureIndex` / `insert`, jest 23's `toThrowError`. Its test that saves with a
// callback (mongoose ≤ 6) fails whatever the plugin.
//
// `auto-increment`: mongoose-auto-increment's mocha suite (test/test.js), written for
// mongoose 4 with callbacks. It runs on this package's mongoose (9) with the mocha,
// chai 4 and async of the third argument (`npm install mocha chai@4 async` in a folder of
// its own), its `require('..')` resolved to `lib/dropins/auto-increment.js`, its hard-coded
// connection string replaced by the server's, and the callbacks it passes to `save`,
// `close`, `dropDatabase` and `drop` called as mongoose 4 called them.
//
// The tests run as they are, in band. Exits with the runner's status.
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
    runner: 'jest/bin/jest.js',
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
      writeFileSync(
        join(work, 'global-setup.cjs'),
        `${drop}\nmodule.exports = async () => { process.env.MONGO_URI = ${JSON.stringify(`mongodb://${host}:${port}`)}; await drop(); };\n`,
      );
      writeFileSync(join(work, 'global-teardown.cjs'), `${drop}\nmodule.exports = async () => { await drop(); };\n`);
    },
    env: (work) => ({ CONFIG: join(work, 'config.json') }),
  },
  'plugin-autoinc': {
    runner: 'jest/bin/jest.js',
    dropin: join(ROOT, 'lib/dropins/plugin-autoinc.js'),
    jestConfig(checkout, work, { modules }) {
      return {
        rootDir: checkout,
        testEnvironment: 'node',
        testMatch: ['**/src/__tests__/**/*-test.js'],
        transform: { '\\.js$': [join(modules, 'ts-jest'), { tsconfig: { allowJs: true, module: 'commonjs', esModuleInterop: true, target: 'es2020' }, diagnostics: false }] },
        moduleNameMapper: {
          '^mongodb-memory-server$': join(work, 'memory-server.cjs'),
          '^mongoose$': join(work, 'mongoose.cjs'),
          '^\\.\\.(/\\.\\.)?$': this.dropin,
        },
        setupFiles: [join(work, 'setup.cjs')],
        setupFilesAfterEnv: [join(work, 'setup-after.cjs')],
        testTimeout: 60_000,
      };
    },
    write(work, { host, port, dbName, modules }) {
      const uri = `mongodb://${host}:${port}/${dbName}?directConnection=true`;
      writeFileSync(
        join(work, 'memory-server.cjs'),
        `// mongodb-memory-server's place: the test server.
class MongodbMemoryServer {
  async getConnectionString() { return ${JSON.stringify(uri)}; }
  async getUri() { return ${JSON.stringify(uri)}; }
  async stop() {}
}
module.exports = MongodbMemoryServer;
module.exports.default = MongodbMemoryServer;
`,
      );
      writeFileSync(
        join(work, 'mongoose.cjs'),
        `// mongoose of today, taking what the suite passes as mongoose 5 took it.
const mongoose = require(${JSON.stringify(join(modules, 'mongoose'))});
const DROPPED = ['autoReconnect', 'reconnectInterval', 'reconnectTries', 'useMongoClient'];
const strip = (options) => {
  if (!options || typeof options !== 'object') return options;
  const kept = { ...options };
  for (const key of DROPPED) delete kept[key];
  return kept;
};
const createConnection = mongoose.createConnection.bind(mongoose);
// mongoose 5's connection was a promise of itself: the suite awaits createConnection(...).catch(...).
mongoose.createConnection = (uri, options) => {
  const connection = createConnection(uri, strip(options));
  connection.catch = (onError) => connection.asPromise().catch(onError);
  return connection;
};
const connect = mongoose.connect.bind(mongoose);
mongoose.connect = (uri, options) => connect(uri, strip(options));
// Driver 3's collection methods, by their names of today.
const collection = mongoose.Collection.prototype;
collection.ensureIndex = function ensureIndex(keys, options) { return this.createIndex(keys, options); };
collection.insert = function insert(docs) { return Array.isArray(docs) ? this.insertMany(docs) : this.insertOne(docs); };
module.exports = mongoose;
module.exports.default = mongoose;
`,
      );
      writeFileSync(join(work, 'setup.cjs'), '// jest-circus has no jasmine global; the suite sets its timeout through it.\nglobal.jasmine = global.jasmine || {};\n');
      writeFileSync(
        join(work, 'setup-after.cjs'),
        `// jest 23's toThrowError, an alias of toThrow that jest 30 dropped.
expect.extend({
  toThrowError(received, expected) {
    try {
      expect(received).toThrow(expected);
      return { pass: true, message: () => 'expected it not to throw' };
    } catch (error) {
      return { pass: false, message: () => error.message };
    }
  },
});
`,
      );
    },
    env: () => ({}),
  },
  'auto-increment': {
    runner: 'mocha/bin/mocha.js',
    args: (runner, work) => ['--require', join(work, 'preload.cjs'), runner, '-R', 'spec', '--timeout', '20000', '--exit', 'test/test.js'],
    write(work, { host, port, modules, checkout }) {
      const uri = `mongodb://${host}:${port}/mongoose-auto-increment-test?directConnection=true`;
      writeFileSync(
        join(work, 'preload.cjs'),
        `// mongoose-auto-increment's suite (mongoose 4, callbacks) on the package's own mongoose:
// its require of '..' is the drop-in, of 'async' and 'chai' the node_modules given, and
// the callbacks it passes are called as mongoose 4 and driver 2 called them.
const Module = require('node:module');
const path = require('node:path');
const MONGOOSE = ${JSON.stringify(join(ROOT, 'node_modules/mongoose'))};
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'mongoose') return resolveFilename.call(this, MONGOOSE, parent, ...rest);
  if (request === '..' && parent && path.dirname(parent.filename) === ${JSON.stringify(join(checkout, 'test'))}) return ${JSON.stringify(join(ROOT, 'lib/dropins/auto-increment.js'))};
  if (request === 'async' || request === 'chai') return resolveFilename.call(this, path.join(${JSON.stringify(modules)}, request), parent, ...rest);
  return resolveFilename.call(this, request, parent, ...rest);
};
const mongoose = require(MONGOOSE);
const withCallback = (proto, name, shape = (result) => [result]) => {
  const original = proto[name];
  proto[name] = function (...args) {
    const callback = typeof args.at(-1) === 'function' ? args.pop() : null;
    const promise = original.apply(this, args);
    if (!callback) return promise;
    promise.then((result) => callback(null, ...shape(result)), (error) => callback(error));
    return undefined;
  };
};
withCallback(mongoose.Model.prototype, 'save', (doc) => [doc, 1]);
withCallback(mongoose.Connection.prototype, 'close');
withCallback(mongoose.mongo.Db.prototype, 'dropDatabase');
withCallback(mongoose.mongo.Collection.prototype, 'drop');
// Its connection string is written in the suite: the test server's instead.
const createConnection = mongoose.createConnection.bind(mongoose);
mongoose.createConnection = (uri, ...rest) => createConnection(${JSON.stringify(uri)}, ...rest);
`,
      );
    },
    env: () => ({}),
  },
};

const [name, checkoutArg, modulesArg] = process.argv.slice(2);
const suite = SUITES[name];
if (!suite || !checkoutArg) {
  console.error(`usage: dropin-suites.mjs <${Object.keys(SUITES).join('|')}> <checkout of the plugin's repository> [node_modules with its runner]`);
  process.exit(2);
}
const checkout = resolve(checkoutArg);
const modules = resolve(modulesArg ?? join(checkout, 'node_modules'));
const runner = join(modules, suite.runner);
if (!existsSync(runner)) {
  console.error(`${modules} has no ${suite.runner}: install the suite's dependencies (npm install --ignore-scripts) or name a node_modules that has them`);
  process.exit(2);
}

const server = await startServer({ kind: process.env.MONGO_SEQUENCE_SERVER || 'mongoeco' });
const work = mkdtempSync(join(tmpdir(), `dropin-suite-${name}-`));
let status;
try {
  const [address] = hostsOf(server.uri);
  const at = address.lastIndexOf(':');
  const where = { host: address.slice(0, at), port: Number(address.slice(at + 1)), dbName: `dropin_suite_${name.replace(/\W/g, '_')}`, modules, checkout };
  suite.write(work, where);
  let args;
  if (suite.jestConfig) {
    writeFileSync(join(work, 'jest.config.json'), JSON.stringify(suite.jestConfig(checkout, work, where)));
    args = [runner, '--config', join(work, 'jest.config.json'), '--ci', '--runInBand'];
  } else {
    args = suite.args(runner, work);
  }
  const run = spawnSync(process.execPath, args, { cwd: checkout, stdio: 'inherit', env: { ...process.env, ...suite.env(work, where) } });
  status = run.status ?? 1;
} finally {
  rmSync(work, { recursive: true, force: true });
  await server.stop?.();
}
process.exit(status);

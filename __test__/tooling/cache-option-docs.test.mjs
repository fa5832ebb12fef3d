// The `cache` option has one description: the core's, written once in the option table
// of src/binding/read/options.rs, from which napi generates `SequenceOptions.cache` in
// index.d.ts. The other typings refer to it: the options of `counterAt` and the inserts
// say "As for …", and the mongoose plugin and the three drop-ins share one interface,
// `CachedNumberingOptions` of mongoose.d.ts, whose text quotes the core's word for word
// (a user hovering the plugin's option reads it whole). Needs no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path) => readFileSync(ROOT + path, 'utf8');
const words = (text) => text.replace(/\s+/g, ' ').trim();

/** The text of the `#[doc = "…"]` lines right above `cache "cache"` in the table `table`. */
export function rustDoc(source, table) {
  const start = source.indexOf(`    ${table} =>`);
  assert.ok(start >= 0, `option table ${table}`);
  const lines = source.slice(0, source.indexOf('cache "cache"', start)).split('\n');
  const doc = [];
  for (let i = lines.length - 2; i >= 0; i--) {
    const m = /^\s*#\[doc = "(.*)"\]\s*$/.exec(lines[i]);
    if (!m) break;
    doc.unshift(m[1].replace(/\\"/g, '"'));
  }
  return words(doc.join(' '));
}

/** The JSDoc texts of the `cache?:` properties of interface `name` (and of the one it may extend), as words. */
export function jsDocs(dts, name) {
  const start = dts.search(new RegExp(`(?:interface|type) ${name}\\b`));
  assert.ok(start >= 0, `${name} declared`);
  const open = dts.indexOf('{', start);
  let depth = 0;
  let end = open;
  for (; end < dts.length; end++) {
    if (dts[end] === '{') depth++;
    else if (dts[end] === '}' && --depth === 0) break;
  }
  const body = dts.slice(open, end);
  return [...body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*cache\?:/g)].map((m) => words(m[1].replace(/^\s*\* ?/gm, '')));
}

const core = rustDoc(read('src/binding/read/options.rs'), 'SequenceOptions');

test('the check itself: a doc comment is read from the table and from an interface', () => {
  const rust = [
    '    Other => OtherTable for X;',
    '    #[doc = " Not this."]',
    '    x "x": Flag;',
    '    T => TTable for E;',
    '    #[doc = " One"]',
    '    #[doc = " \\"two\\"."]',
    '    cache "cache": Number;',
  ].join('\n');
  assert.equal(rustDoc(rust, 'T'), 'One "two".');
  const dts = 'interface A {\n  /** no */\n  other?: 1\n}\nexport interface B {\n  /** not this */\n  other?: 2\n  /**\n   * Two\n   * lines.\n   */\n  cache?: number\n}';
  assert.deepEqual(jsDocs(dts, 'B'), ['Two lines.']);
  assert.deepEqual(jsDocs(dts, 'A'), []);
});

test("the core's text is true of descending counters and of the give-back", () => {
  assert.match(core, /^Reserve blocks of this many values per process/);
  assert.match(core, /descending for a negative step/);
  assert.match(core, /given back by `release\(\)` or a graceful close/);
  assert.doesNotMatch(core, /\bascend within one\b/, 'the old text, wrong for descending counters');
});

test('index.d.ts carries the text napi generates from the option table', () => {
  assert.deepEqual(jsDocs(read('index.d.ts'), 'SequenceOptions'), [core], 'index.d.ts (regenerate it with npm run build)');
  for (const name of ['LocatedOptions', 'InsertOptions']) {
    const [doc] = jsDocs(read('index.d.ts'), name);
    assert.match(doc, /^As for (`sequence\(\)`|the sequence functions)\.$/, `${name}.cache refers to it`);
  }
});

test("the mongoose plugin's shared cache option quotes the core's text word for word", () => {
  const [doc] = jsDocs(read('mongoose.d.ts'), 'CachedNumberingOptions');
  assert.ok(doc.includes(`As the core says: ${core}`), `CachedNumberingOptions.cache quotes:\n${core}\n--- it reads:\n${doc}`);
  assert.match(read('mongoose.d.ts'), /interface AutoIncrementOptions extends CachedNumberingOptions\b/);
});

test('the drop-ins take the shared cache option instead of describing their own', () => {
  const extending = {
    'lib/dropins/typegoose.d.ts': /interface AutoIncrementIDOptions extends CachedNumberingOptions\b/,
    'lib/dropins/auto-increment.d.ts': /interface AutoIncrementOptions extends CachedNumberingOptions\b/,
    'lib/dropins/plugin-autoinc.d.ts': /type AutoIncSettings = \{[\s\S]*?\} & CachedNumberingOptions;/,
  };
  for (const [file, shape] of Object.entries(extending)) {
    const dts = read(file);
    assert.match(dts, shape, `${file} extends CachedNumberingOptions`);
    assert.doesNotMatch(dts, /\bcache\?:/, `${file} declares no cache option of its own`);
  }
  assert.doesNotMatch(read('mongoose.d.mts'), /\bcache\?:/, 'mongoose.d.mts re-exports the CommonJS typings');
});

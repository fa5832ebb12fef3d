// Finds the fenced code blocks of the documentation (README.md and docs/*.md) and the
// doctest annotations attached to them.
//
// An annotation is an HTML comment (GitHub renders it as nothing) placed right before a
// block, blank lines allowed in between; several may precede one block:
//
//   <!-- doctest setup
//   const db = client.db('my_app_db');
//   -->
//   <!-- doctest teardown
//   await client.close();
//   -->
//   <!-- doctest not run: why this block cannot be run or checked -->
//
// `setup` code runs before the block and `teardown` code after it, in the same scope
// (hidden lines, as in Rust's doctests). `not run` needs a reason and leaves the block
// unrun, and the doc test counts it as such.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The documentation files of the package: README.md, the other Markdown files at the
 * top (ARCHITECTURE.md, CHANGELOG.md…), then docs/*.md, then docs/contributing/*.md, each
 * group by name.
 */
export function docFiles(root) {
  const top = readdirSync(root)
    .filter((n) => n.endsWith('.md') && n !== 'README.md')
    .sort();
  const files = [join(root, 'README.md'), ...top.map((n) => join(root, n))];
  for (const folder of ['docs', join('docs', 'contributing')]) {
    const dir = join(root, folder);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) if (name.endsWith('.md')) files.push(join(dir, name));
  }
  return files;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const ANNOTATION_START = /^\s*<!--\s*doctest\b/;

/**
 * The blocks of one Markdown file: `{ file, line, lang, code, setup, teardown, notRun }`,
 * `line` being the 1-based line of the opening fence and `code` the block's text with
 * the fence's indentation removed. Also returns the annotations that belong to no block
 * (`stray`) and the number of fence lines seen (`fenceLines`), which the doc test
 * compares with twice the number of blocks.
 */
export function extractBlocks(path, root) {
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const file = relative(root, path);
  const blocks = [];
  const attached = new Set();
  let fenceLines = 0;
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    fenceLines++;
    const [, indent, fence, lang] = open;
    const body = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^(\s*)(`{3,}|~{3,})\s*$/.exec(lines[j]);
      if (close && close[2][0] === fence[0] && close[2].length >= fence.length) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
    }
    if (j >= lines.length) throw new Error(`${file}:${i + 1}: code block never closed`);
    fenceLines++;
    const block = { file, line: i + 1, lang: lang.toLowerCase(), code: body.join('\n') + '\n', setup: [], teardown: [], notRun: null };
    for (const annotation of annotationsBefore(lines, i, file)) {
      attached.add(annotation.line);
      if (annotation.kind === 'setup') block.setup.push(annotation);
      else if (annotation.kind === 'teardown') block.teardown.push(annotation);
      else block.notRun = annotation.reason;
    }
    blocks.push(block);
    i = j;
  }
  const stray = [];
  lines.forEach((l, n) => {
    if (ANNOTATION_START.test(l) && !attached.has(n + 1)) stray.push(`${file}:${n + 1}`);
  });
  return { blocks, stray, fenceLines };
}

// The annotations that end right before line `fenceIndex` (0-based), in document order.
function annotationsBefore(lines, fenceIndex, file) {
  const found = [];
  let k = fenceIndex - 1;
  for (;;) {
    while (k >= 0 && lines[k].trim() === '') k--;
    if (k < 0 || !/-->\s*$/.test(lines[k])) break;
    let start = k;
    while (start >= 0 && !/<!--/.test(lines[start])) start--;
    if (start < 0 || !ANNOTATION_START.test(lines[start])) break;
    const raw = lines.slice(start, k + 1).join('\n');
    const inner = raw.replace(/^\s*<!--\s*doctest\b/, '').replace(/-->\s*$/, '');
    const newline = inner.indexOf('\n');
    const head = (newline < 0 ? inner : inner.slice(0, newline)).trim();
    const body = newline < 0 ? '' : inner.slice(newline + 1);
    const where = `${file}:${start + 1}`;
    let annotation;
    if (head === 'setup' || head === 'teardown') {
      annotation = { kind: head, code: body, line: start + 1, firstCodeLine: start + 2 };
    } else if (/^not run:\s*\S/.test(head)) {
      annotation = { kind: 'notRun', reason: head.replace(/^not run:\s*/, '') + (body.trim() ? ` ${body.trim()}` : ''), line: start + 1 };
    } else {
      throw new Error(`${where}: unknown doctest annotation '${head}' (setup, teardown, or 'not run: <reason>')`);
    }
    found.unshift(annotation);
    k = start - 1;
  }
  return found;
}

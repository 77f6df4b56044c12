// Lets the published types check without the optional peers (`skipLibCheck: false` in a project that
// installed none of them): every import of an optional peer in dist's declaration files gets a
// `// @ts-ignore` line, as Vite's types do for `sass` and `lightningcss`. With the peer installed the types
// are its own; without it they are `any`, and a project that never uses that feature still type-checks.
// The peers are package.json's optional ones. Run by `npm run build` after tsup.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const optional = Object.entries(pkg.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta?.optional === true)
  .map(([name]) => name);

const escaped = optional.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
// A whole import statement (tsup writes each on one line, but allow several) of a peer or a file of it.
const IMPORT = new RegExp(
  `^(import\\s[^;]*?\\sfrom\\s+['"](?:${escaped.join('|')})(?:/[^'"]*)?['"];?)$`,
  'gm',
);
const MARK = '// @ts-ignore an optional peer: its types when installed, `any` when not';

function* declarationFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* declarationFiles(path);
    else if (/\.d\.c?ts$/.test(entry.name)) yield path;
  }
}

let marked = 0;
for (const file of declarationFiles(join(root, 'dist'))) {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(IMPORT, (statement, _whole, offset) => {
    if (text.slice(Math.max(0, offset - MARK.length - 1), offset).startsWith(MARK)) return statement;
    marked++;
    return `${MARK}\n${statement}`;
  });
  if (next !== text) writeFileSync(file, next);
}
console.log(`peer-types: ${marked} import(s) of optional peers marked in dist's declaration files`);

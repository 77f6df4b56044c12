// Lints the package's Python files (the interpreters' driver) with pyflakes: `npm run lint` runs it after Biome.
// pyflakes comes from the system packages (python3-pyflakes, installed by scripts/system-packages.sh).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const FILES = ['src/tools/python/driver.py'];
const root = fileURLToPath(new URL('..', import.meta.url));
const has = (command, args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

const pyflakes = has('pyflakes3', ['--version'])
  ? ['pyflakes3', []]
  : has('python3', ['-c', 'import pyflakes'])
    ? ['python3', ['-m', 'pyflakes']]
    : undefined;
if (pyflakes === undefined) {
  console.error(
    'lint-python: pyflakes is not installed (Debian: apt-get install python3-pyflakes; or pip install pyflakes)',
  );
  process.exit(1);
}
const [command, args] = pyflakes;
process.exit(spawnSync(command, [...args, ...FILES], { cwd: root, stdio: 'inherit' }).status ?? 1);

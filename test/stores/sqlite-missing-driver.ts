// Opens a SQLiteStore with better-sqlite3 made unresolvable and prints the outcome: importing the stores
// entry must work without it, and the constructor must say what to install.
import Module from 'node:module';

const resolver = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const resolve = resolver._resolveFilename;
resolver._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'better-sqlite3') throw new Error("Cannot find module 'better-sqlite3'");
  return resolve.call(this, request, ...rest);
};

const { SQLiteStore } = await import('../../src/stores/index');
try {
  new SQLiteStore({ path: ':memory:' });
  console.log('no error');
} catch (error) {
  console.log(`${(error as Error).name}: ${(error as Error).message}`);
}

import { MemoryStore } from 'lagent-ts';
import type { SessionStore } from 'lagent-ts/stores';
import { describeStoreContract } from './contract';

// The in-process store: every "open" is a view of one instance, as the processes of the other stores share
// a database (closing a view leaves the others open). A store with a ttlMs is an instance of its own.
const shared = new MemoryStore();

function view(): SessionStore {
  let closed = false;
  return new Proxy(shared, {
    get(target, key) {
      if (key === 'close') {
        return () => {
          closed = true;
        };
      }
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (closed) return closedStore().readSession('x', 'x');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function closedStore(): MemoryStore {
  const store = new MemoryStore();
  store.close();
  return store;
}

describeStoreContract('MemoryStore', () => ({
  open: async (options = {}) => (options.ttlMs === undefined ? view() : new MemoryStore(options)),
}));

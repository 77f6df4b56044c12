import type { SessionStore } from 'lagent-ts/stores';

/**
 * The store as a process that dies when its durable call fails leaves it: the failure is never recorded (the
 * journal stays unfinished, as after a crash), everything else is written as usual. In-process tests make a
 * "dying" call fail (a model that throws) and read the journal as a crashed process left it.
 */
export function dyingStore<S extends SessionStore>(store: S): S {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property !== 'finishJournal') return value.bind(target);
      return (namespace: string, callId: string, options?: { entry?: { result?: { status?: string } } }) => {
        if (options?.entry?.result?.status === 'failed') throw new Error('the process died first');
        return (value as SessionStore['finishJournal']).call(target, namespace, callId, options);
      };
    },
  });
}

export { deepClone } from './clone';
export { isIterator, isPlainObject, isThenable } from './is';
export { SyncBridge, type SyncBridgeTarget } from './sync-bridge';

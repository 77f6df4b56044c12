export { deepClone } from './clone';
export { isIterator, isPlainObject, isThenable } from './is';
export {
  SyncBridge,
  type SyncBridgeCallOptions,
  type SyncBridgeOptions,
  type SyncBridgeTarget,
} from './sync-bridge';

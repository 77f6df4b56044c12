export { defaultAssetsDir, readAssets, type UIAssets } from './assets';
export {
  EventRelay,
  type EventStreamLimits,
  EventStreams,
  UI_EVENT_KINDS,
  type UIEvent,
} from './event-relay';
export { UIServer, type UIServerOptions } from './server';

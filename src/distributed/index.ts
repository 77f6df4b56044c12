// lagent-ts/distributed: agents served over HTTP and scaled out on BullMQ. fastify, bullmq and ioredis are
// optional peers, loaded where they are used.
export * from './http/index';
export * from './queue/index';

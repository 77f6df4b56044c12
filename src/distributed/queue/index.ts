// Scale-out on BullMQ: QueueAgentWorker, AsyncQueueAgent
export {};

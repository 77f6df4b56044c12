// Internal entry, not a public subpath: the classes that sync twins host in the sync bridge's worker and that
// no user constructs (the sync HTTP client's and the fake servers' hosts). The worker loads this file by path
// (`locateBridge().hosts`); the package's `exports` do not list it.
export { HTTPAgentClientHost } from '../distributed/http/client';
export { A2AAgentHost } from '../distributed/protocols/a2a-agent';
export { AISDKModelHost } from '../llms/ai-sdk-model-host';
export { FakeAnthropicHost } from '../testing/fake-anthropic-worker';
export { FakeOpenAIHost } from '../testing/fake-openai-worker';

// HTTP serving: HTTPAgentServer, HTTPAgentClient, AsyncHTTPAgentClient (Lagent's protocol)
export {};

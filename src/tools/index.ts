// lagent-ts/tools: real tools. Heavy dependencies are optional peers, loaded where they are used.

// Python interpreters
export {};

// Web and search tools

// Office tools

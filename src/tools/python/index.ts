// Python interpreters (issue 9)
export {};

/** The API key every fake service accepts. */
export const GOOD_KEY = 'test-key';

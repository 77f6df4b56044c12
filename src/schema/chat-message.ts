/** One chat turn in OpenAI's shape. `name` carries e.g. the tool name on environment messages. */
export interface ChatMessage {
  role: string;
  content: string;
  name?: string | undefined;
}

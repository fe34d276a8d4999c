// A browser-free Socket.IO client: connects to /chat, joins a conversation, sends a message and
// prints the streamed answer. Usage: node chat_client.cjs URL TOKEN CONVERSATION_ID MESSAGE
const { io } = require("socket.io-client");

const [url, token, conversationId, content] = process.argv.slice(2);
const fail = (code, what) => {
  console.error(what);
  process.exit(code);
};
setTimeout(() => fail(6, "TIMEOUT"), 30000).unref();

const socket = io(`${url}/chat`, { auth: { token }, reconnection: false });
socket.on("connect_error", (err) => fail(5, "CONNECT_ERROR " + JSON.stringify(err.data ?? err.message)));
socket.on("chat:chunk", (data) => process.stdout.write(data.delta));
socket.on("chat:error", (data) => fail(3, "CHAT_ERROR " + JSON.stringify(data)));
socket.on("chat:done", (data) => {
  process.stdout.write("\nDONE " + JSON.stringify({ id: data.message.id, status: data.message.status }) + "\n");
  socket.close();
});
socket.on("connect", async () => {
  const joined = await socket.emitWithAck("conversation:join", { conversation_id: conversationId });
  if (!joined.ok) fail(2, "JOIN " + JSON.stringify(joined));
  const sent = await socket.emitWithAck("chat:send", { conversation_id: conversationId, content });
  if (!sent.ok) fail(4, "SEND " + JSON.stringify(sent));
});

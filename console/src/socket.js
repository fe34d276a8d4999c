// One Socket.IO connection to the `/chat` namespace. The token is read at every (re)connect;
// websocket only, so a socket needs no sticky session when gateways scale out.
import { io } from '/console/vendor/socket.io.esm.min.js';
import { session } from './api.js';

let socket = null;
const reconnectListeners = new Set();

export function chatSocket() {
  if (socket) return socket;
  socket = io('/chat', {
    auth: (send) => send({ token: session.token() }),
    transports: ['websocket'],
    reconnectionDelay: 300,
    reconnectionDelayMax: 3000,
  });
  let connectedBefore = false;
  socket.on('connect', () => {
    document.body.dataset.socket = 'connected';
    if (connectedBefore) for (const listener of reconnectListeners) listener();
    connectedBefore = true;
  });
  socket.on('disconnect', () => { document.body.dataset.socket = 'disconnected'; });
  socket.on('connect_error', () => { document.body.dataset.socket = 'error'; });
  return socket;
}

export function onReconnect(listener) {
  reconnectListeners.add(listener);
  return () => reconnectListeners.delete(listener);
}

export function closeSocket() {
  if (socket) socket.disconnect();
  socket = null;
}

/** emit with an ack; the ack is `{ok, ...}` or `{ok: false, error: {code, message}}`. */
export async function call(event, data, timeoutMs = 15000) {
  try {
    return await chatSocket().timeout(timeoutMs).emitWithAck(event, data);
  } catch (exc) {
    return { ok: false, error: { code: 'no_ack', message: 'the server did not answer' } };
  }
}

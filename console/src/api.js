// The REST API: every call carries the token kept in sessionStorage (never a URL or a cookie).
const TOKEN_KEY = 'skillhive.token';
const NAMESPACE_KEY = 'skillhive.namespace';

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  setToken: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
  namespace: () => sessionStorage.getItem(NAMESPACE_KEY) || 'default',
  setNamespace: (value) => sessionStorage.setItem(NAMESPACE_KEY, value),
};

export class ApiError extends Error {
  constructor(status, body) {
    const error = body && typeof body === 'object' && body.error ? body.error : {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `http_${status}`;
    this.details = error.details || {};
  }
}

export const enc = encodeURIComponent;

// `.` and `..` in any spelling URL resolution collapses (`%2e` included): a name or a file path
// taken from a link or a skill could otherwise send the token to another route.
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** fetch under /api/v1; JSON in (`json`) and out; throws ApiError with the API's code. */
export async function api(path, { method = 'GET', json, body, headers = {}, text = false } = {}) {
  if (path.split(/[?#]/, 1)[0].split('/').some((segment) => DOT_SEGMENT.test(segment))) {
    throw new ApiError(0, { error: { code: 'invalid_path', message: 'a name or path may not be . or ..' } });
  }
  const sent = { ...headers };
  const token = session.token();
  if (token) sent.Authorization = `Bearer ${token}`;
  if (json !== undefined) {
    sent['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  }
  let response;
  try {
    response = await fetch(`/api/v1${path}`, { method, headers: sent, body, credentials: 'omit', cache: 'no-store' });
  } catch (exc) {
    throw new ApiError(0, { error: { code: 'network_error', message: 'the service cannot be reached' } });
  }
  if (response.status === 204) return null;
  const type = response.headers.get('content-type') || '';
  const data = type.includes('json') && !text ? await response.json() : await response.text();
  if (!response.ok) {
    throw new ApiError(response.status, typeof data === 'string' ? safeJson(data) : data);
  }
  return data;
}

function safeJson(text) {
  try { return JSON.parse(text); } catch { return null; }
}

/** `code: message` of an error, for people. */
export function describe(exc) {
  return exc instanceof ApiError ? `${exc.code}: ${exc.message}` : String(exc && exc.message || exc);
}

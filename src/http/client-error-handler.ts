import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { newId, nowIso } from '../kernel/new-id.js';
import { AppError } from './app-error.js';
import { errorBody } from './error-handler.js';

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses before Fastify sees it (headers over
 * Node's size limit, a control character in a header, a malformed request line, a request not received in
 * time) is answered with the error envelope, as every other refusal is, and the connection is closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('VALIDATION_ERROR', 'The request headers are too large', {
          status: 431,
          details: { field: 'headers', reason: 'too large' },
        })
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('VALIDATION_ERROR', 'The request was not received in time', {
            status: 408,
            details: { field: 'request', reason: 'timed out' },
          })
        : new AppError('VALIDATION_ERROR', 'The request is not valid HTTP', {
            status: 400,
            details: { field: 'request', reason: 'malformed' },
          });
  const requestId = newId('req');
  const body = JSON.stringify(errorBody(refusal, requestId, nowIso()));
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n\r\n${body}`,
  );
}

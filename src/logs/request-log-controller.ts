import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { LogOutput } from './log-output.js';

/**
 * Fastify's two lines per request ("incoming request", "request completed"), made only while stdout keeps
 * them: the log store never does, and serializing and redacting them cost a fifth of a busy server's CPU even
 * when every output then dropped them. Asked per request, so a change of `logging.level` applies at once.
 * Every other line Fastify logs (errors of a request, stream errors) is made as before.
 */
export class RequestLogController extends LogController {
  constructor(private readonly output: LogOutput) {
    super();
  }

  override incomingRequest(
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (this.output.keepsRequestLines()) super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error || this.output.keepsRequestLines()) super.requestCompleted(error, request, reply, metadata);
  }
}

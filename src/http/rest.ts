/**
 * The REST router, built from the generated route table: for each operation, enforce its declared
 * gate, call the module's handler with the validated input, and write the declared content type.
 * Handlers never check gates themselves.
 */
import { Router, type Request, type Response } from 'express';
import { routes, type RestHandlers, type RestRequest } from '../../generated/rest';
import type { GateEnforcer } from '../auth/gates';
import { requestContext, type RequestContext } from './context';

type AnyHandler = (request: RestRequest<never>, context: RequestContext) => Promise<{ status: string | number; body: unknown; headers?: Record<string, string> }>;

export function createRestRouter(deps: { handlers: RestHandlers<RequestContext>; gates: GateEnforcer }): Router {
  const router = Router();
  for (const route of routes) {
    const handler = (deps.handlers as unknown as Record<string, AnyHandler>)[route.operationId];
    if (!handler) throw new Error(`no REST handler for ${route.operationId}`);
    router[route.method](route.expressPath, async (req: Request, res: Response) => {
      const context = requestContext(req);
      await deps.gates.enforce(route.gate, context.auth);
      const input = { params: req.params, query: req.query, body: req.body } as unknown as RestRequest<never>;
      const result = await handler.call(deps.handlers, input, context);
      const status = Number(result.status);
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      res.status(status);
      const contentType = route.responses[String(result.status)] ?? null;
      if (contentType === null || result.body === undefined) {
        res.end();
      } else if (contentType === 'application/json') {
        res.json(result.body);
      } else {
        res.type(contentType).send(result.body);
      }
    });
  }
  return router;
}

/** REST bindings of provider sign-in: browser redirects with the flow cookie, and the code exchange. */
import { parse as parseCookies } from 'cookie';
import { reply, SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import { FLOW_COOKIE } from './flow-cookie';
import type { SigninService } from './service';

export function createSigninRest(service: SigninService) {
  return bindRest({
    async startLogin({ params, query }, context) {
      const started = await service.startLogin(params.provider, query.redirectUri, context.raw?.header('host'));
      context.setCookie(FLOW_COOKIE, started.cookie, service.flowCookieOptions());
      return reply(302, undefined, { Location: started.location, 'Cache-Control': 'no-store' });
    },
    async loginCallback({ params, query }, context) {
      const cookie = parseCookies(context.raw?.header('cookie') ?? '')[FLOW_COOKIE];
      // Cleared on every answer, success or not: a flow is good once.
      context.setCookie(FLOW_COOKIE, '', service.flowCookieOptions(0));
      const done = await service.callback(params.provider, query, new URL(context.selfUrl, 'http://local').search, cookie);
      return reply(302, undefined, { Location: done.location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
    },
    exchangeLoginCode: ({ body }, context) => service.exchange(body.loginCode, context.client),
    async connectPlatform({ params, query }, context) {
      const started = await service.startConnect(context.auth, params.platform, query.type, query.redirectUri, context.raw?.header('host'));
      context.setCookie(FLOW_COOKIE, started.cookie, service.flowCookieOptions());
      return reply(302, undefined, { Location: started.location, 'Cache-Control': 'no-store' });
    },
    /** The dashboard's form of connectPlatform: the same flow cookie, the provider's URL as JSON instead of a 302. */
    async startPlatformConnect({ params, body }, context) {
      const started = await service.startConnect(context.auth, params.platform, body.type, body.redirectUri, context.raw?.header('host'));
      context.setCookie(FLOW_COOKIE, started.cookie, service.flowCookieOptions());
      return { authorizationUrl: started.location };
    },
    async disconnectPlatform({ params, query }, context) {
      await service.disconnect(context.auth, params.platform, query.type);
      return SUCCESS;
    },
  });
}

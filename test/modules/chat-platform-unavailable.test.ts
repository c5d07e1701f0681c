/**
 * A chat platform that is not configured, or whose API refuses connections, is an expected state
 * of a third party, not a server fault: the profile refresh answers 503
 * PLATFORM_UNAVAILABLE `The platform is unavailable` with Retry-After on REST, the same code and
 * message on GraphQL, never a 500; nothing was refreshed, so no cooldown starts.
 */
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

const UNAVAILABLE = { error: 'PLATFORM_UNAVAILABLE', message: 'The platform is unavailable' };
const REFRESH = 'mutation($p: String!, $u: String!) { refreshPlatformUserProfile(platform: $p, platformUserId: $u) { username } }';

describe('profile refresh with no platform API, or one that refuses connections', () => {
  const t = useTestApp({
    chat: {
      request_timeout_ms: 2000,
      // platform_a and platform_c have no api_url; platform_b's is a loopback port nothing
      // listens on (1: privileged, so no test server takes it), which refuses connections.
      platforms: { platform_b: { api_url: 'http://127.0.0.1:1' } },
    },
  });

  test.each(['platform_a', 'platform_b'])('%s: 503 PLATFORM_UNAVAILABLE with Retry-After, no cooldown, the same on GraphQL', async (platform) => {
    const owner = await devLogin(t);
    for (let i = 0; i < 2; i++) {
      // A second attempt is not a 429: a failed refresh starts no cooldown.
      const res = await fetch(`${t.url}/v1/chat/users/${platform}/viewer-1/refresh`, { method: 'POST', headers: { authorization: `Bearer ${owner.accessToken}` } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(await res.json()).toEqual(UNAVAILABLE);
    }
    const g = await gql(t.url, REFRESH, { p: platform, u: 'viewer-2' }, { authorization: `Bearer ${owner.accessToken}` });
    expect(g.body.errors?.[0]).toMatchObject({ message: UNAVAILABLE.message, extensions: { code: UNAVAILABLE.error } });
    // Other failures keep their own codes.
    expect((await api(t, 'POST', `/chat/users/nowhere/x/refresh`, { token: owner.accessToken })).status).toBe(400);
  });
});

import { createServiceApp, methodsForPath, type ServiceApp } from "../http/app.js";
import { denyAll } from "../http/auth.js";

/**
 * Routes each request to the function app that owns its path, as API Gateway does on AWS;
 * paths no function owns get the service's 404 body.
 */
export function localGateway(apps: ServiceApp[]) {
  const owners = apps.map((app) => ({ app, methods: methodsForPath(app) }));
  const fallback = createServiceApp({ authenticate: denyAll, modules: [] });
  return {
    fetch(request: Request, env?: object): Response | Promise<Response> {
      const path = new URL(request.url).pathname;
      const owner = owners.find((o) => o.methods(path).size > 0)?.app ?? fallback;
      return owner.fetch(request, env);
    },
  };
}

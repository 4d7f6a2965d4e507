import type { ExecutionResult, GraphQLExecutor } from '../contract/graphql-executor';
import type { Router } from './server';

/** Same process: the bridge's operations run on the router's Apollo Server without an HTTP hop. */
export function inProcessExecutor(router: Router): GraphQLExecutor {
  return {
    async execute(query, variables, auth, operationName) {
      const contextValue = await router.context(auth.authorization, auth.requestId, auth.clientIp);
      const response = await router.apollo.executeOperation({ query, variables, operationName }, { contextValue });
      if (response.body.kind !== 'single') throw new Error('incremental delivery is not used by the bridge');
      return response.body.singleResult as ExecutionResult;
    },
  };
}

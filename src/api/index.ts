import addFormats from 'ajv-formats';
import type { Router } from 'express';
import { type Document, OpenAPIBackend, OpenAPIValidator, type ValidationContext } from 'openapi-backend';
import { verifyAccountToken } from '../authz/account-tokens.ts';
import { createAuthenticator } from '../authz/authenticator.ts';
import type { BearerVerifier, Caller, Door } from '../authz/caller.ts';
import { loadPolicy } from '../authz/policy.ts';
import type { ServiceContext } from '../context.ts';
import { UUID } from '../lib/ids.ts';
import { loadCatalogue } from './catalogue.ts';
import { createPipeline, type Pipeline, type PipelineDeps } from './pipeline.ts';
import { handlers, preflights } from './resources/index.ts';
import { createRestRouter } from './rest-router.ts';
import { precompiledRoutes } from './routes.ts';

export interface Api {
  pipeline: Pipeline;
  restRouter: Router;
}

export interface ApiOptions {
  /** Verifiers tried after account tokens (the OAuth access-token verifier). */
  extraVerifiers?: BearerVerifier[];
  challenge: PipelineDeps['challenge'];
  acceptsAtDoor?: (caller: Caller, door: Door) => boolean;
}

/**
 * openapi-backend checks the document against the OpenAPI 3.0 meta-schema, which rejects 3.1 features we
 * use (`type: [string, 'null']`). Its router and Ajv validators handle 3.1 schemas; the document itself is
 * checked by the SDK generator in codegen.
 */
class OpenApi31Backend extends OpenAPIBackend {
  override validateDefinition() {
    return this.document;
  }

  /**
   * Its router rebuilds the list of operations from the document on every match (twice per request, about
   * 100 µs of lodash on the REST hot path); the document never changes after init, so the list is built
   * once here.
   */
  override async init() {
    await super.init();
    // Built with `validate: false`, openapi-backend made no validator; this one compiles only the request
    // validators now. Response validators (VALIDATE_RESPONSES, on in tests) are compiled on first use:
    // production never runs them, and compiling them all cost most of the start-up's time and garbage.
    this.validator = new SharedAjvValidator({
      definition: this.definition,
      ajvOpts: this.ajvOpts,
      customizeAjv: this.customizeAjv,
      router: this.router,
      lazyCompileValidators: true,
      coerceTypes: this.coerceTypes,
    });
    this.validator.preCompileRequestValidators();
    const operations = this.router.getOperations();
    this.router.getOperations = () => operations;
    return this;
  }
}

type Ajv = ReturnType<OpenAPIValidator['getAjv']>;
type AjvOpts = NonNullable<Parameters<OpenAPIValidator['getAjv']>[1]>;

/**
 * openapi-backend makes a new Ajv for every validator it compiles (five per operation), and each Ajv
 * compiles the JSON Schema meta-schema again to check the schemas given to it and keeps it. One Ajv per
 * kind of validator (request body, parameters, response, response headers) and option set compiles the
 * same validators.
 */
class SharedAjvValidator extends OpenAPIValidator {
  readonly #engines = new Map<string, Ajv>();

  override getAjv(validationContext: ValidationContext, opts: AjvOpts = {}): Ajv {
    const key = `${validationContext} ${JSON.stringify(opts)}`;
    let ajv = this.#engines.get(key);
    if (!ajv) {
      ajv = super.getAjv(validationContext, opts);
      this.#engines.set(key, ajv);
    }
    return ajv;
  }
}

/** Builds the operation pipeline from openapi.yaml and policies/, and the REST door in front of it. */
export async function createApi(service: ServiceContext, options: ApiOptions): Promise<Api> {
  const catalogue = await loadCatalogue();
  const api = new OpenApi31Backend({
    definition: catalogue.document as Document,
    strict: true,
    // openapi-backend does not validate: the pipeline runs the validators (after authentication), and
    // init() above builds them.
    validate: false,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false },
    customizeAjv: (ajv) => {
      addFormats.default(ajv);
      // ajv-formats' uuid also takes `urn:uuid:…`, which PostgreSQL's uuid type refuses: an id is the
      // bare 8-4-4-4-12 hex form (either case, as RFC 9562 reads it), nothing else.
      ajv.addFormat('uuid', UUID);
      return ajv;
    },
  });
  // Authentication is the pipeline's first step, for REST and MCP alike; openapi-backend only routes (its
  // router, in rest-router.ts) and holds the validators.
  await api.init();
  const needed = new Map<string, string[]>();
  for (const op of catalogue.operations.values()) {
    needed.set(op.scope, [...(needed.get(op.scope) ?? []), op.operationId]);
  }
  const policy = await loadPolicy(service.config.policyDir, needed);
  const accountTokens: BearerVerifier = (token) => verifyAccountToken(service.runPrepared, token);
  const pipeline = createPipeline({
    service,
    catalogue,
    api,
    policy,
    handlers,
    preflights,
    authenticator: createAuthenticator({
      verifiers: [accountTokens, ...(options.extraVerifiers ?? [])],
      acceptsAtDoor: options.acceptsAtDoor ?? (() => true),
      runPrepared: service.runPrepared,
      cacheMs: service.config.authCacheSeconds * 1000,
    }),
    challenge: options.challenge,
  });
  return {
    pipeline,
    restRouter: createRestRouter(
      service,
      api,
      precompiledRoutes(api.router, api.router.getOperations()),
      pipeline,
    ),
  };
}

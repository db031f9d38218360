import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { isoTime, type PlainRow } from '../../db/columns.ts';
import { AccountModel, type IAccountModel } from '../../db/entities/index.ts';
import { assertModelBaseUrl, clearOtherDefaults, sealModelApiKey } from '../../domain/models.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { findAccountRow, findAccountRows, findByHandle } from '../account-resources.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';
import { problems } from '../problem.ts';

/** The API key never leaves the service: a response says whether there is one and how it ends. */
function serializeModel(
  model: IAccountModel | PlainRow<IAccountModel>,
  accountHandle: string,
): Schemas.AccountModel {
  return {
    id: model.id,
    account: accountHandle,
    handle: model.handle,
    model: model.model,
    baseUrl: model.baseUrl ?? null,
    hasApiKey: model.apiKeyEncrypted !== null,
    apiKeyLast4: model.apiKeyLast4 ?? null,
    isDefault: model.isDefault,
    createdAt: isoTime(model.createdAt),
    updatedAt: isoTime(model.updatedAt),
  };
}

function findModel(op: OperationContext): Promise<IAccountModel> {
  return findByHandle(op, AccountModel, op.params.modelHandle!, 'model');
}

export const modelHandlers = {
  async listModels(op) {
    const found = await findAccountRows(op, AccountModel);
    return { status: 200, body: found.body((m) => serializeModel(m, op.target!.handle)) };
  },

  async getModel(op) {
    const model = await findAccountRow(op, AccountModel, op.params.modelHandle!, 'model');
    return { status: 200, body: serializeModel(model, op.target!.handle) };
  },

  async createModel(op) {
    const account = op.target!.account;
    const { handle, model, baseUrl = null, apiKey = null, isDefault = false } = op.body;
    if (baseUrl !== null) assertModelBaseUrl(baseUrl, '/body/baseUrl');
    if (await op.em.count(AccountModel, { account: account.id, handle })) {
      throw problems.conflict(`"${account.handle}" already has a model "${handle}".`, '/body/handle');
    }
    // The id is the key's associated data, so it must exist before the key is encrypted.
    const id = uuidv7();
    if (isDefault) await clearOtherDefaults(op.em, account.id, id);
    const row = op.em.create(AccountModel, {
      id,
      account,
      handle,
      model,
      baseUrl,
      isDefault,
      ...sealModelApiKey(op.service.cipher, id, apiKey),
    });
    op.audit('model.create', 'account_model', id, { handle, model, isDefault, hasApiKey: apiKey !== null });
    await op.em.flush();
    return {
      status: 201,
      headers: { Location: `/api/v1/accounts/${account.handle}/models/${row.handle}` },
      body: serializeModel(row, account.handle),
    };
  },

  async updateModel(op) {
    const row = await findModel(op);
    const { model, baseUrl, apiKey, isDefault } = op.body;
    if (typeof baseUrl === 'string') assertModelBaseUrl(baseUrl, '/body/baseUrl');
    if (isDefault === true && !row.isDefault) await clearOtherDefaults(op.em, op.target!.accountId, row.id);
    op.em.assign(row, {
      ...(model !== undefined ? { model } : {}),
      ...(baseUrl !== undefined ? { baseUrl } : {}),
      ...(isDefault !== undefined ? { isDefault } : {}),
      ...(apiKey !== undefined ? sealModelApiKey(op.service.cipher, row.id, apiKey) : {}),
    });
    // Field names only: the audit trail must not become a second place where the key is kept.
    op.audit('model.update', 'account_model', row.id, { handle: row.handle, fields: Object.keys(op.body) });
    await op.em.flush();
    return { status: 200, body: serializeModel(row, op.target!.handle) };
  },

  async deleteModel(op) {
    const row = await findModel(op);
    op.audit('model.delete', 'account_model', row.id, { handle: row.handle });
    op.em.remove(row);
    await op.em.flush();
    return { status: 204 };
  },
} satisfies Partial<Handlers>;

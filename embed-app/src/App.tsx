/**
 * The embed: the product's figures, the user's position and the deposit and withdraw flows, with
 * the user's own wallet (in the frame, or the host page's through the bridge).
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Address, erc20Abi, formatUnits, getAddress, type Hex, numberToHex } from 'viem';
import {
  type ApprovalKind,
  type DepositRung,
  depositWithLadder,
  type LadderStep,
} from '../../packages/sdk/src/engine/ladder.ts';
import { engineAbi } from '../../packages/sdk/src/generated/engine-abi.ts';
import { bridgeProvider } from './bridge.ts';
import { type ChainAccess, chainAccess } from './chain.ts';
import type { EmbedPageConfig, EmbedProductView } from './config.ts';
import { describeError, type ShownError } from './errors.ts';
import {
  displayAmount,
  displayApy,
  displayBps,
  displayDate,
  displayUnits,
  parseAmount,
  shortAddress,
  usdValue,
} from './format.ts';
import { type HostChannel, hostChannel } from './host-events.ts';
import { discoverWallets, type Eip1193Provider, type WalletOption } from './wallet.ts';

type StepState = 'todo' | 'wallet' | 'pending' | 'done' | 'failed';
interface Step {
  label: string;
  state: StepState;
  txHash?: Hex;
}
interface Position {
  shares: bigint;
  assets: bigint;
  walletAssets: bigint;
  requests: RedeemRequestView[];
}
interface RedeemRequestView {
  id: bigint;
  shares: bigint;
  assets: bigint;
  readyAt: number;
  claimable: boolean;
}

const STEP_WORDS: Record<StepState, string> = {
  todo: 'waiting',
  wallet: 'confirm in your wallet',
  pending: 'submitted, waiting for the network',
  done: 'done',
  failed: 'failed',
};

export function App({ config }: { config: EmbedPageConfig }) {
  const host = useMemo(() => hostChannel(config.host_origin), [config.host_origin]);
  const rootRef = useRef<HTMLDivElement>(null);
  const [product, setProduct] = useState<EmbedProductView>(config.product);
  const [wallets, setWallets] = useState<WalletOption[] | undefined>(undefined);
  const [provider, setProvider] = useState<Eip1193Provider | undefined>(undefined);
  const [account, setAccount] = useState<Address | undefined>(undefined);
  const [chainId, setChainId] = useState<number | undefined>(undefined);
  const [error, setError] = useState<ShownError | undefined>(undefined);
  const [position, setPosition] = useState<Position | undefined>(undefined);
  const [tab, setTab] = useState<'deposit' | 'withdraw'>(
    config.product.gate.deposit ? 'deposit' : 'withdraw',
  );

  useEffect(() => {
    // "iframe load to interactive": the frame's navigation start to this first committed render.
    performance.mark('embed-interactive');
    if (rootRef.current) host.watchSize(rootRef.current);
    host.emit('ready', { product_slug: config.slug });
    if (config.bridge && config.host_origin) {
      setWallets([
        { id: 'host', name: 'Your wallet', provider: bridgeProvider(config.host_origin) },
      ]);
      return;
    }
    return discoverWallets((list, settled) => {
      if (list.length > 0 || settled) setWallets(list);
    });
  }, [host, config]);

  const chain = useMemo(
    () => (provider && account ? chainAccess(provider, account) : undefined),
    [provider, account],
  );
  const rightChain = chainId === product.chain_id;

  const fail = useCallback(
    (err: unknown) => {
      const shown = describeError(err);
      setError(shown);
      host.emit('error', { code: shown.code });
      return shown;
    },
    [host],
  );

  const refresh = useCallback(async () => {
    if (!chain || !rightChain) return;
    const engine = product.engine_address as Address;
    const [shares, walletAssets] = (await Promise.all([
      chain.read(engine, engineAbi, 'balanceOf', [chain.account]),
      chain.read(product.asset_address as Address, erc20Abi, 'balanceOf', [chain.account]),
    ])) as [bigint, bigint];
    const assets =
      shares === 0n
        ? 0n
        : ((await chain.read(engine, engineAbi, 'convertToAssets', [shares])) as bigint);
    const requests = product.vault_kind === 'async' ? await readRequests(chain, product) : [];
    setPosition({ shares, assets, walletAssets, requests });
    fetch(config.api_base, { headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : undefined))
      .then((body) => body?.success && setProduct(body.data as EmbedProductView))
      .catch(() => {});
  }, [
    chain,
    rightChain,
    product.engine_address,
    product.asset_address,
    product.vault_kind,
    config.api_base,
  ]);

  useEffect(() => {
    refresh().catch(fail);
  }, [refresh, fail]);

  const connect = async (w: WalletOption) => {
    setError(undefined);
    try {
      const accounts = (await w.provider.request({ method: 'eth_requestAccounts' })) as string[];
      const first = accounts[0];
      if (!first) throw Object.assign(new Error('no account'), { code: 4100 });
      const id = Number(await w.provider.request({ method: 'eth_chainId' }));
      setProvider(w.provider);
      setAccount(getAddress(first));
      setChainId(id);
      w.provider.on?.('accountsChanged', (a: unknown) => {
        const list = a as string[];
        setAccount(list[0] ? getAddress(list[0]) : undefined);
      });
      w.provider.on?.('chainChanged', (c: unknown) => setChainId(Number(c)));
      host.emit('wallet_connected', { address: getAddress(first), chain_id: id });
    } catch (err) {
      fail(err);
    }
  };

  const switchChain = async () => {
    if (!provider) return;
    setError(undefined);
    try {
      await provider.request({
        method: 'wallet_switchEthereumChain',
        params: [{ chainId: numberToHex(product.chain_id) }],
      });
      setChainId(Number(await provider.request({ method: 'eth_chainId' })));
    } catch (err) {
      fail(err);
    }
  };

  return (
    <div class="embed" ref={rootRef}>
      <ProductHeader product={product} />
      {product.gate.reason && (
        <p class="notice" role="status">
          {product.gate.reason}
        </p>
      )}
      <section class="card" aria-label="Wallet">
        <WalletPanel wallets={wallets} account={account} connect={connect} bridge={config.bridge} />
        {account && !rightChain && (
          <div class="notice warn" role="alert">
            <p>
              Your wallet is on another network. This product lives on {product.chain} (chain{' '}
              {product.chain_id}).
            </p>
            <button type="button" class="primary" onClick={switchChain}>
              Switch to {product.chain}
            </button>
          </div>
        )}
      </section>
      {account && rightChain && position && <PositionCard product={product} position={position} />}
      {error && (
        <p class="error" role="alert">
          {error.message}
        </p>
      )}
      {chain && rightChain && position && (
        <section class="card" aria-label="Deposit and withdraw">
          <div class="tabs" role="tablist">
            {product.gate.deposit && (
              <button
                type="button"
                role="tab"
                aria-selected={tab === 'deposit'}
                class={tab === 'deposit' ? 'tab active' : 'tab'}
                onClick={() => setTab('deposit')}
              >
                Deposit
              </button>
            )}
            <button
              type="button"
              role="tab"
              aria-selected={tab === 'withdraw'}
              class={tab === 'withdraw' ? 'tab active' : 'tab'}
              onClick={() => setTab('withdraw')}
            >
              Withdraw
            </button>
          </div>
          {tab === 'deposit' && product.gate.deposit ? (
            <DepositFlow
              config={config}
              product={product}
              chain={chain}
              position={position}
              host={host}
              onDone={refresh}
              onError={fail}
              clearError={() => setError(undefined)}
            />
          ) : (
            <WithdrawFlow
              config={config}
              product={product}
              chain={chain}
              position={position}
              host={host}
              onDone={refresh}
              onError={fail}
              clearError={() => setError(undefined)}
            />
          )}
        </section>
      )}
      <footer class="foot">
        Non-custodial: your wallet signs every transaction; {product.partner} never holds your
        funds.
      </footer>
    </div>
  );
}

async function readRequests(chain: ChainAccess, p: EmbedProductView): Promise<RedeemRequestView[]> {
  const engine = p.engine_address as Address;
  const ids = await chain.redeemRequestIds(engine, BigInt(p.deployed_block));
  const now = await chain.blockTime();
  const out: RedeemRequestView[] = [];
  for (const id of ids) {
    const r = (await chain.read(engine, engineAbi, 'redeemRequest', [id])) as {
      shares: bigint;
      claimed: boolean;
    };
    if (r.claimed) continue;
    const [readyAt, assets] = (await Promise.all([
      chain.read(engine, engineAbi, 'claimableAt', [id]),
      chain.read(engine, engineAbi, 'convertToAssets', [r.shares]),
    ])) as [bigint, bigint];
    // The engine's ERC-7540 view says whether it is claimable now; engines without it: the time.
    const claimable = await chain
      .read(engine, engineAbi, 'claimableRedeemRequest', [id, chain.account])
      .then(
        (shares) => (shares as bigint) > 0n,
        () => readyAt > 0n && now >= Number(readyAt),
      );
    out.push({ id, shares: r.shares, assets, readyAt: Number(readyAt), claimable });
  }
  return out;
}

function ProductHeader({ product: p }: { product: EmbedProductView }) {
  const total = p.service_fee_bps + p.partner_fee_bps;
  return (
    <header class="card product">
      <p class="partner">{p.partner}</p>
      <h1>{p.display_name}</h1>
      <div class="figures">
        <div>
          <p class="label">Net APY</p>
          <p class="big" data-testid="net-apy">
            {p.net_apy ? <Percent value={displayApy(p.net_apy)} /> : '—'}
            {p.net_apy && p.apy_basis === 'underlying_estimate' && (
              <>
                {' '}
                <span class="badge">Estimate</span>
              </>
            )}
          </p>
          <p class="hint" data-testid="net-apy-basis">
            {apyBasisText(p)}
          </p>
          {p.net_apy_7d && (
            <p class="hint">
              Over the last 7 days:{' '}
              <strong>
                <Percent value={displayApy(p.net_apy_7d)} />
              </strong>
            </p>
          )}
        </div>
        <div>
          <p class="label">Total deposited</p>
          <p class="big">
            {p.tvl ? displayAmount(p.tvl, 0) : '—'} <span class="unit">{p.asset_symbol}</span>
          </p>
          <p class="hint">{p.chain}</p>
        </div>
      </div>
      <p class="fees">
        Fees: <Percent value={displayBps(total)} /> of the yield only, never of your deposit (
        <Percent value={displayBps(p.service_fee_bps)} /> to the service,{' '}
        <Percent value={displayBps(p.partner_fee_bps)} /> to {p.partner}). They are charged only on
        new gains above the previous high (a high-water mark), so a loss is never charged twice.
        {p.scheduled_fee_change && (
          <>
            {` From ${displayDate(Date.parse(p.scheduled_fee_change.at) / 1000)} the fees become `}
            <Percent
              value={displayBps(
                p.scheduled_fee_change.service_fee_bps + p.scheduled_fee_change.partner_fee_bps,
              )}
            />
            {' of the yield.'}
          </>
        )}
      </p>
    </header>
  );
}

/** A percentage ("6.12 %"): a line never breaks between its number and its % sign. */
function Percent({ value }: { value: string }) {
  return <span class="nowrap">{value}</span>;
}

/**
 * What the net APY figure is, in words. The basis is the API's `apy_basis`: a launch-day estimate
 * is never described as the product's own share price change (the portal labels it "Estimate" too).
 */
function apyBasisText(p: Pick<EmbedProductView, 'net_apy' | 'apy_basis' | 'as_of_date'>) {
  if (!p.net_apy) return 'Measured after the first full day.';
  if (p.apy_basis === 'underlying_estimate') {
    return 'Estimated from the underlying vault; no full day yet: the vault’s latest day, annualised, with the fees applied. Not a guarantee.';
  }
  return `After fees, from the share price change of ${p.as_of_date} (UTC), annualised. Not a guarantee.`;
}

/** Whether the embed runs inside a frame (a cross-origin parent throws on access: framed too). */
function framed(): boolean {
  try {
    return window.self !== window.top;
  } catch {
    return true;
  }
}

function WalletPanel(props: {
  wallets: WalletOption[] | undefined;
  account: Address | undefined;
  connect: (w: WalletOption) => void;
  bridge: boolean;
}) {
  if (props.account) {
    return (
      <p class="connected">
        Connected: <span class="mono">{shortAddress(props.account)}</span>
      </p>
    );
  }
  if (!props.wallets) return <p class="hint">Looking for a wallet…</p>;
  if (props.wallets.length === 0) {
    const url = new URL(location.href);
    url.searchParams.delete('bridge');
    // In a frame, the browser's wallet may be there in a tab of its own; in a tab, it is not there.
    return framed() ? (
      <div>
        <p>No wallet is available inside this frame.</p>
        <p>
          <a href={url.toString()} target="_blank" rel="noopener">
            Open in a new tab
          </a>{' '}
          to use your browser wallet there.
        </p>
      </div>
    ) : (
      <div>
        <p>No wallet was found in this browser.</p>
        <p>Install or enable a wallet extension, then reload this page.</p>
      </div>
    );
  }
  return (
    <div class="wallets">
      {props.wallets.map((w) => (
        <button type="button" class="primary" key={w.id} onClick={() => props.connect(w)}>
          {w.icon && <img src={w.icon} alt="" width={20} height={20} />}
          Connect {props.wallets!.length > 1 ? w.name : props.bridge ? 'your wallet' : 'wallet'}
        </button>
      ))}
    </div>
  );
}

/** An amount and its unit, each kept whole: a line may break only between them. */
function Amount({ value, unit }: { value: string; unit: string }) {
  return (
    <>
      <span class="nowrap">{value}</span> <span class="nowrap">{unit}</span>
    </>
  );
}

function PositionCard({ product: p, position }: { product: EmbedProductView; position: Position }) {
  // Shares to 6 places like the amounts (an engine's shares may have 12 or 18); the exact count
  // in the title.
  const exactShares = formatUnits(position.shares, p.share_decimals);
  return (
    <section class="card position" aria-label="Your position">
      <h2>Your position</h2>
      <dl>
        <div>
          <dt>Value</dt>
          <dd data-testid="position-assets">
            <Amount
              value={displayUnits(position.assets, p.asset_decimals, 6)}
              unit={p.asset_symbol}
            />
          </dd>
        </div>
        <div>
          <dt>In USD</dt>
          <dd>
            <span class="nowrap">${usdValue(position.assets, p.asset_decimals, p.usd_price)}</span>
          </dd>
        </div>
        <div>
          <dt>Shares</dt>
          <dd
            data-testid="position-shares"
            title={`${exactShares} shares`}
            data-exact={exactShares}
          >
            <span class="nowrap">{displayUnits(position.shares, p.share_decimals, 6)}</span>
          </dd>
        </div>
        <div>
          <dt>In your wallet</dt>
          <dd>
            <Amount
              value={displayUnits(position.walletAssets, p.asset_decimals, 6)}
              unit={p.asset_symbol}
            />
          </dd>
        </div>
      </dl>
    </section>
  );
}

interface FlowProps {
  config: EmbedPageConfig;
  product: EmbedProductView;
  chain: ChainAccess;
  position: Position;
  host: HostChannel;
  onDone: () => Promise<void>;
  onError: (err: unknown) => ShownError;
  clearError: () => void;
}

function Steps({ steps }: { steps: Step[] }) {
  if (steps.length === 0) return null;
  return (
    <ol class="steps" aria-label="Progress">
      {steps.map((s) => (
        <li key={s.label} class={`step ${s.state}`} data-state={s.state}>
          <span class="step-label">{s.label}</span>: {STEP_WORDS[s.state]}
        </li>
      ))}
    </ol>
  );
}

/** Runs steps one after the other, keeping their states on screen. */
function useSteps() {
  const [steps, setSteps] = useState<Step[]>([]);
  const [busy, setBusy] = useState(false);
  const update = (i: number, patch: Partial<Step>) =>
    setSteps((list) => list.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  return { steps, setSteps, busy, setBusy, update };
}

async function runTx(
  chain: ChainAccess,
  update: (patch: Partial<Step>) => void,
  send: () => Promise<Hex>,
  onSubmitted?: (hash: Hex) => void,
) {
  update({ state: 'wallet' });
  const hash = await send();
  update({ state: 'pending', txHash: hash });
  onSubmitted?.(hash);
  const receipt = await chain.receipt(hash);
  update({ state: 'done' });
  return receipt;
}

function report(config: EmbedPageConfig, body: Record<string, string>) {
  // Links the transaction like an inbound *.submitted event; best effort (the chain is the truth).
  fetch(`${config.api_base}/transactions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).catch(() => {});
}

function DepositFlow(props: FlowProps) {
  const { product: p, chain, position } = props;
  const engine = p.engine_address as Address;
  const [amount, setAmount] = useState('');
  const [preview, setPreview] = useState<bigint | undefined>(undefined);
  const { steps, setSteps, busy, setBusy, update } = useSteps();
  const [plan, setPlan] = useState<{ rung: DepositRung; approval: ApprovalKind } | undefined>();
  const parsed = parseAmount(amount, p.asset_decimals);
  const tooMuch = parsed.ok && parsed.value > position.walletAssets;

  useEffect(() => {
    setPreview(undefined);
    if (!parsed.ok) return;
    const value = parsed.value;
    const t = setTimeout(() => {
      chain
        .read(engine, engineAbi, 'previewDeposit', [value])
        .then((s) => setPreview(s as bigint))
        .catch(() => {});
    }, 150);
    return () => clearTimeout(t);
  }, [amount]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!parsed.ok || tooMuch || busy) return;
    props.clearError();
    const assets = parsed.value;
    setBusy(true);
    // The steps of the rung the ladder picks (packages/sdk/src/engine/ladder.ts), by step name.
    let index: Partial<Record<LadderStep['step'], number>> = {};
    let rung: DepositRung = 'transactions';
    let approval: ApprovalKind = 'transaction';
    setPlan(undefined);
    try {
      const result = await depositWithLadder({
        provider: chain.provider,
        product: {
          slug: p.slug,
          chain_id: p.chain_id,
          engine_contract_address: engine,
          asset_address: p.asset_address,
        },
        owner: chain.account,
        assets,
        permitRouter: (p.permit_router_address as Address | null) ?? null,
        pollIntervalMs: 500,
        onStep: (s) => {
          if (s.step === 'plan') {
            rung = s.rung;
            approval = s.approval;
            setPlan({ rung, approval });
            const list = ladderSteps(s.rung, s.approval, p.asset_symbol);
            index = Object.fromEntries(list.map((x, i) => [x.step, i]));
            setSteps(list.map((x) => ({ label: x.label, state: 'todo' })));
            return;
          }
          const i = index[s.step];
          if (i !== undefined) {
            update(i, {
              state: s.state,
              ...('txHash' in s && s.txHash ? { txHash: s.txHash } : {}),
            });
          }
          if (s.state === 'pending' && s.step === 'deposit' && s.txHash) {
            props.host.emit('deposit_submitted', { tx_hash: s.txHash, rung, approval });
            reportDeposit(s.txHash);
          }
          if (s.state === 'pending' && s.step === 'batch') {
            props.host.emit('deposit_submitted', {
              tx_hash: null,
              batch_id: s.batchId ?? null,
              rung,
              approval,
            });
          }
        },
      });
      // A batch's transaction is known once the wallet reports it: reported to the service then.
      if (result.rung === 'batch') reportDeposit(result.depositTxHash);
      props.host.emit('deposit_confirmed', {
        tx_hash: result.depositTxHash,
        assets: formatUnits(assets, p.asset_decimals),
        shares: formatUnits(result.shares, p.share_decimals),
        rung: result.rung,
        approval: result.approval,
        confirmations: result.confirmations,
        ...(result.batchId ? { batch_id: result.batchId } : {}),
      });
      setAmount('');
      await props.onDone();
    } catch (err) {
      props.onError(err);
      setSteps((list) =>
        list.map((s) =>
          s.state === 'wallet' || s.state === 'pending' || s.state === 'todo'
            ? { ...s, state: 'failed' }
            : s,
        ),
      );
      // The position shows what the chain holds now (an approval confirmed before a refusal).
      await props.onDone().catch(() => {});
    } finally {
      setBusy(false);
    }

    function reportDeposit(hash: Hex) {
      report(props.config, {
        kind: 'deposit',
        tx_hash: hash,
        user_address: chain.account,
        amount: formatUnits(assets, p.asset_decimals),
      });
    }
  };

  return (
    <form onSubmit={submit} class="flow" noValidate>
      <label for="deposit-amount">Amount to deposit ({p.asset_symbol})</label>
      <div class="amount">
        <input
          id="deposit-amount"
          inputMode="decimal"
          autoComplete="off"
          placeholder="0.00"
          value={amount}
          disabled={busy}
          onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
          aria-describedby="deposit-help"
        />
        <button
          type="button"
          class="ghost"
          disabled={busy}
          onClick={() => setAmount(formatUnits(position.walletAssets, p.asset_decimals))}
        >
          Max
        </button>
      </div>
      <p id="deposit-help" class="hint" aria-live="polite">
        {amount && !parsed.ok
          ? parsed.message
          : tooMuch
            ? `Your wallet holds only ${displayUnits(position.walletAssets, p.asset_decimals, 6)} ${p.asset_symbol}.`
            : preview !== undefined
              ? `You receive ${displayUnits(preview, p.share_decimals, 6)} shares (preview from the product contract).`
              : `Available: ${displayUnits(position.walletAssets, p.asset_decimals, 6)} ${p.asset_symbol}`}
      </p>
      <button type="submit" class="primary wide" disabled={busy || !parsed.ok || tooMuch}>
        {busy ? 'Depositing…' : 'Deposit'}
      </button>
      {plan && steps.length > 0 && (
        <p class="hint" data-testid="deposit-rung" data-rung={plan.rung}>
          {plan.rung === 'batch'
            ? 'Your wallet batches calls: you confirm once, and the deposit happens whole or not at all.'
            : plan.rung === 'permit'
              ? `${p.asset_symbol} supports permits: you sign once (free), then confirm one deposit transaction.`
              : plan.approval === 'transaction'
                ? 'Two confirmations: first allow the product to take the amount, then the deposit.'
                : 'One confirmation: your wallet already allows this amount.'}
        </p>
      )}
      <Steps steps={steps} />
      {preview !== undefined && (
        <span hidden data-testid="deposit-preview">
          {preview.toString()}
        </span>
      )}
    </form>
  );
}

/** The steps a rung shows, named as the ladder's steps. */
function ladderSteps(
  rung: DepositRung,
  approval: ApprovalKind,
  symbol: string,
): Array<{ step: LadderStep['step']; label: string }> {
  if (rung === 'batch') {
    return [
      {
        step: 'batch',
        label:
          approval === 'in_batch'
            ? `Allow ${symbol} and deposit, one confirmation`
            : 'Deposit, one confirmation',
      },
    ];
  }
  if (rung === 'permit') {
    return [
      { step: 'signature', label: `Sign to allow ${symbol} (no transaction)` },
      { step: 'deposit', label: 'Deposit' },
    ];
  }
  return [
    ...(approval === 'transaction' ? [{ step: 'approve' as const, label: `Allow ${symbol}` }] : []),
    { step: 'deposit', label: 'Deposit' },
  ];
}

function WithdrawFlow(props: FlowProps) {
  const { product: p, chain, position } = props;
  const engine = p.engine_address as Address;
  const isAsync = p.vault_kind === 'async';
  const [amount, setAmount] = useState('');
  const [max, setMax] = useState(false);
  const [preview, setPreview] = useState<bigint | undefined>(undefined);
  const { steps, setSteps, busy, setBusy, update } = useSteps();
  const parsed = parseAmount(amount, p.asset_decimals);
  const tooMuch = !max && parsed.ok && parsed.value > position.assets;

  useEffect(() => {
    setPreview(undefined);
    if (!parsed.ok || max) return;
    const value = parsed.value;
    const t = setTimeout(() => {
      chain
        .read(engine, engineAbi, isAsync ? 'convertToShares' : 'previewWithdraw', [value])
        .then((s) => setPreview(s as bigint))
        .catch(() => {});
    }, 150);
    return () => clearTimeout(t);
  }, [amount, max]);

  const fail = (err: unknown) => {
    props.onError(err);
    setSteps((list) =>
      list.map((s) => (s.state === 'done' ? s : { ...s, state: 'failed' as const })),
    );
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy || (!max && (!parsed.ok || tooMuch))) return;
    props.clearError();
    setBusy(true);
    try {
      const shares = max
        ? position.shares
        : ((await chain.read(engine, engineAbi, isAsync ? 'convertToShares' : 'previewWithdraw', [
            (parsed as { value: bigint }).value,
          ])) as bigint);
      setSteps([{ label: isAsync ? 'Request withdrawal' : 'Withdraw', state: 'todo' }]);
      const receipt = await runTx(
        chain,
        (x) => update(0, x),
        () =>
          isAsync
            ? chain.write(engine, engineAbi, 'requestRedeem', [
                shares,
                chain.account,
                chain.account,
              ])
            : max
              ? chain.write(engine, engineAbi, 'redeem', [shares, chain.account, chain.account])
              : chain.write(engine, engineAbi, 'withdraw', [
                  (parsed as { value: bigint }).value,
                  chain.account,
                  chain.account,
                ]),
        (hash) => {
          props.host.emit('redeem_submitted', { tx_hash: hash });
          report(props.config, {
            kind: 'redeem',
            tx_hash: hash,
            user_address: chain.account,
            shares: formatUnits(shares, p.share_decimals),
          });
        },
      );
      if (isAsync) {
        const ev = chain.engineEvent(receipt, engine, 'RedeemRequested');
        props.host.emit('redeem_requested', {
          tx_hash: receipt.transactionHash,
          request_id: ev ? numberToHex(ev.requestId as bigint) : null,
          shares: formatUnits(shares, p.share_decimals),
        });
      } else {
        props.host.emit('redeem_confirmed', {
          tx_hash: receipt.transactionHash,
          shares: formatUnits(shares, p.share_decimals),
        });
      }
      setAmount('');
      setMax(false);
      await props.onDone();
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  const claim = async (r: RedeemRequestView) => {
    props.clearError();
    setBusy(true);
    setSteps([{ label: 'Claim', state: 'todo' }]);
    try {
      const receipt = await runTx(
        chain,
        (x) => update(0, x),
        () => chain.write(engine, engineAbi, 'claimRedeem', [r.id, chain.account]),
        (hash) =>
          report(props.config, {
            kind: 'redeem',
            tx_hash: hash,
            user_address: chain.account,
            shares: formatUnits(r.shares, p.share_decimals),
          }),
      );
      props.host.emit('redeem_confirmed', {
        tx_hash: receipt.transactionHash,
        request_id: numberToHex(r.id),
        shares: formatUnits(r.shares, p.share_decimals),
      });
      await props.onDone();
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="flow">
      {isAsync && position.requests.length > 0 && (
        <section class="requests" aria-label="Withdrawal requests">
          <h3>Your withdrawal requests</h3>
          <ul>
            {position.requests.map((r) => (
              <li key={r.id.toString()} data-testid="redeem-request">
                <span>
                  About {displayUnits(r.assets, p.asset_decimals, 6)} {p.asset_symbol}
                  {r.claimable
                    ? r.readyAt > 0
                      ? `: ready to claim since ${displayDate(r.readyAt)}.`
                      : ': ready to claim.'
                    : r.readyAt > 0
                      ? `: pending, estimated ready ${displayDate(r.readyAt)}.`
                      : ': pending; the vault has not said when it settles.'}
                </span>
                {r.claimable && (
                  <button type="button" class="primary" disabled={busy} onClick={() => claim(r)}>
                    Claim
                  </button>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
      {position.shares === 0n ? (
        <p class="hint">You have nothing to withdraw.</p>
      ) : (
        <form onSubmit={submit} noValidate>
          <label for="withdraw-amount">Amount to withdraw ({p.asset_symbol})</label>
          <div class="amount">
            <input
              id="withdraw-amount"
              inputMode="decimal"
              autoComplete="off"
              placeholder="0.00"
              value={amount}
              disabled={busy}
              onInput={(e) => {
                setMax(false);
                setAmount((e.target as HTMLInputElement).value);
              }}
              aria-describedby="withdraw-help"
            />
            <button
              type="button"
              class="ghost"
              disabled={busy}
              onClick={() => {
                setMax(true);
                setAmount(formatUnits(position.assets, p.asset_decimals));
              }}
            >
              Max
            </button>
          </div>
          <p id="withdraw-help" class="hint" aria-live="polite">
            {max
              ? `All your shares (${formatUnits(position.shares, p.share_decimals)}).`
              : amount && !parsed.ok
                ? parsed.message
                : tooMuch
                  ? `Your position is worth ${displayUnits(position.assets, p.asset_decimals, 6)} ${p.asset_symbol}.`
                  : preview !== undefined
                    ? `Uses ${formatUnits(preview, p.share_decimals)} shares (preview from the product contract).`
                    : isAsync
                      ? 'Withdrawals are requested first and paid when the vault settles them.'
                      : `Available: ${displayUnits(position.assets, p.asset_decimals, 6)} ${p.asset_symbol}`}
          </p>
          <button
            type="submit"
            class="primary wide"
            disabled={busy || (!max && (!parsed.ok || tooMuch))}
          >
            {busy ? 'Working…' : isAsync ? 'Request withdrawal' : 'Withdraw'}
          </button>
        </form>
      )}
      <Steps steps={steps} />
    </div>
  );
}

/** Inline CSS of the hosted page (served with a CSP nonce; no external assets). Mobile first. */
export const STYLES = `
*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
html{-webkit-text-size-adjust:100%}
body{margin:0;padding:1rem;background:#eef1f5;color:#1a1d21;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.card{max-width:30rem;margin:0 auto;background:#fff;border-radius:12px;padding:1.25rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
.merchant{display:flex;align-items:center;gap:.75rem;margin:0 0 .75rem;min-width:0}
.logo{display:block;max-height:48px;max-width:min(160px,40vw);width:auto;height:auto;object-fit:contain;flex:none}
.merchant-name{margin:0;font-weight:600;color:#3b4148;overflow-wrap:anywhere;min-width:0}
h1{font-size:1.35rem;margin:0 0 .25rem}
.summary{margin:.25rem 0;font-size:1.1rem}
.order{margin:0;color:#4a5058;font-size:.9rem}
.badge{display:inline-block;margin:.25rem 0;padding:.15rem .5rem;border-radius:4px;background:#fff4ce;color:#5c4400;border:1px solid #e0c25a;font-size:.85rem}
.status{margin:1rem 0}
.panel{border-radius:8px;padding:.75rem 1rem;border:1px solid}
.panel p{margin:0}
.panel-waiting{background:#eef4ff;border-color:#9db7e8;color:#12336b}
.panel-partial{background:#fff4ce;border-color:#e0c25a;color:#4d3900}
.panel-paid{background:#e7f6ec;border-color:#7cc493;color:#0b4f24;font-weight:600}
.panel-expired,.panel-partialExpired{background:#fdecec;border-color:#e59a9a;color:#7a1212}
.facts{margin:0 0 1rem}
.facts div{display:flex;flex-wrap:wrap;gap:.25rem 1rem;justify-content:space-between;align-items:center;padding:.35rem 0;border-bottom:1px solid #e3e6ea}
.facts dt{color:#4a5058}
.facts dd{margin:0;text-align:right}
.facts.small{margin:.5rem 0 0;font-weight:400;font-size:.85rem}
.facts.small dd{word-break:break-all}
.amount{font-size:1.25rem}
.qr{margin:0 auto 1rem;text-align:center}
.qr-code svg{width:min(240px,70vw);height:auto;display:block;margin:0 auto}
figcaption{color:#4a5058;font-size:.9rem}
.label{margin:0 0 .25rem;color:#4a5058}
.address-row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:0 0 1rem}
#address{flex:1 1 16rem;font:600 .95rem/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f4f6f8;border:1px solid #d5dae0;border-radius:6px;padding:.5rem;word-break:break-all;user-select:all}
.copy{font:inherit;font-size:.9rem;padding:.45rem .8rem;border-radius:6px;border:1px solid #1f5fbf;background:#1f5fbf;color:#fff;cursor:pointer;min-height:44px}
.copy:focus-visible,a:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.warning{font-size:.9rem;color:#5c3d00;background:#fff8e5;border-left:4px solid #e0a800;padding:.5rem .75rem;margin:0 0 1rem}
.expiry{font-size:.9rem;color:#3b4148;margin:0}
#countdown{font-variant-numeric:tabular-nums;font-weight:600}
.note{font-size:.9rem;color:#3b4148}
a{color:#1a4f9c}
.return{margin:.75rem 0 0}
.button{display:inline-flex;align-items:center;justify-content:center;min-height:44px;padding:.5rem 1rem;border-radius:6px;border:1px solid #1f5fbf;background:#1f5fbf;color:#fff;text-decoration:none;font-weight:600;max-width:100%;overflow-wrap:anywhere}
.button-cancel,.button-return{background:#fff;color:#1a4f9c}
.panel .button{font-weight:600}
.wallet-link{margin:0 0 1rem;text-align:center}
.langs{margin-top:1rem;font-size:.9rem}
footer{margin-top:.75rem;color:#5b626a;font-size:.8rem}
code{word-break:break-all}
.offscreen{position:fixed;left:-9999px;top:0}
@media (min-width:40rem){body{padding:2.5rem 1rem}.card{padding:2rem}}
`;

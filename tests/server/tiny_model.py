#!/usr/bin/env python3
"""tiny_model.py: writes a tiny llama-architecture GGUF model with random
weights, for llama-server in the tests.

    python3 tiny_model.py OUT.gguf

Its vocabulary is SentencePiece-style with byte fallback: three control
tokens and the 256 byte tokens, so that any text is tokenizable and a
grammar can force any reply byte by byte. One layer, 32-wide: it loads in
milliseconds and answers a long prompt in well under a second. The chat
template is ChatML, so /v1/chat/completions and /v1/messages build a
prompt without guessing.
"""
import sys

import numpy as np
import gguf

N_EMBD, N_FF, N_HEAD, N_LAYER, N_CTX = 32, 64, 2, 1, 32768
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(20261202)
    tokens, scores, types = [b"<unk>", b"<s>", b"</s>"], [0.0, 0.0, 0.0], [
        gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append(("<0x%02X>" % b).encode())
        scores.append(-1.0)
        types.append(gguf.TokenType.BYTE)
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("klab-tests-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    def ones(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    t("token_embd.weight", n_vocab, N_EMBD)
    ones("output_norm.weight", N_EMBD)
    t("output.weight", n_vocab, N_EMBD)
    for i in range(N_LAYER):
        p = "blk.%d." % i
        ones(p + "attn_norm.weight", N_EMBD)
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(p + n + ".weight", N_EMBD, N_EMBD)
        ones(p + "ffn_norm.weight", N_EMBD)
        t(p + "ffn_gate.weight", N_FF, N_EMBD)
        t(p + "ffn_up.weight", N_FF, N_EMBD)
        t(p + "ffn_down.weight", N_EMBD, N_FF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

"""chess_model: one chess GPT of the MoE-X (arXiv:2503.07639) BSP study as build targets: <name>_config,
<name> (lm_checkpoint) and <name>_bsp (its coverage / reconstruction CSV and its board-tracking CSV, legal-move
rate and loss against the uniform-legal-move floor, both with the config's seed);
chess_control: the same metrics for a random initialisation of a model's config."""

load("//tools/config:config.bzl", "experiment_config")
load("//tools/train:lm_checkpoint.bzl", "lm_checkpoint")

SCALES = {
    "smoke": "smoke.textproto",
    "cpu": "cpu.textproto",
    "paper": "paper.textproto",
}

_GAMES = "//datasets/chess:games"

# Picks the BSP splits out of the dataset's outputs.
_SPLITS = ("for f in $(locations %s); do case $$f in *bsp_train.jsonl) train=$$f;; " % _GAMES +
           "*bsp_test.jsonl) test=$$f;; esac; done; ")

def chess_model(name, init_from = None):
    experiment_config(
        name = name + "_config",
        base = "base.textproto",
        scales = SCALES,
        overlays = ["models/%s.textproto" % name],
    )
    lm_checkpoint(
        name = name,
        config = ":%s_config" % name,
        data = _GAMES,
        tokenizer = "//datasets/chess:vocabulary.chars",
        init_from = init_from,
    )
    native.genrule(
        name = name + "_bsp",
        srcs = [":" + name, _GAMES],
        outs = [name + ".bsp.csv", name + ".board.csv"],
        exec_tools = [":evaluate_bsp"],
        cmd = _SPLITS + "for f in $(locations :%s); do case $$f in *.pt) ckpt=$$f;; esac; done; " % name +
              "$(location :evaluate_bsp) --checkpoint=$$ckpt --name=%s " % name +
              "--bsp_train=$$train --bsp_test=$$test --cpu_slot_dir=/tmp/sparse_layers_cpu_slots --out=$(location %s.bsp.csv) " % name +
              "--board_tracking_out=$(location %s.board.csv) 2>/dev/null" % name,
        message = "BSP coverage of " + name,
    )

def chess_control(name, model):
    native.genrule(
        name = name + "_bsp",
        srcs = [":%s_config" % model, _GAMES],
        outs = [name + ".bsp.csv", name + ".board.csv"],
        exec_tools = [":evaluate_bsp"],
        cmd = _SPLITS + "$(location :evaluate_bsp) --config=$(location :%s_config) --name=%s " % (model, name) +
              "--bsp_train=$$train --bsp_test=$$test --cpu_slot_dir=/tmp/sparse_layers_cpu_slots --out=$(location %s.bsp.csv) " % name +
              "--board_tracking_out=$(location %s.board.csv) 2>/dev/null" % name,
        message = "BSP coverage of " + name,
    )

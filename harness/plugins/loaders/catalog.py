"""The built-in data sets for ``harness data list|fetch|verify``: where each comes from, its license, and the files
its loader reads, with their SHA-256 pinned where the official bytes were available to this project.

The pins were computed from the copies in ``../shared/data``, which their ``SOURCE.md`` files describe as
byte-for-byte copies of the repositories at the commits below; each was also checked against the repository's git
blob at that commit (the blob id is the SHA-1 of the same bytes). The files are fetched from
``raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH``, which serves exactly those blobs. Every path here is one a
loader reads with its default options; ``tests/test_data_command.py`` checks that a fresh data root filled by
``harness data fetch all`` loads.

Two data sets have an official download but no pinned checksum, because their official files were never
available to this project: Provo (the OSF norms CSV; the copies in ``../shared/data/provo`` are derived tables)
and WritingPrompts (the fairseq archive). ``harness data fetch provo|writingprompts`` downloads them unverified,
says so, and prints the SHA-256 of what arrived; ``fetch all`` leaves them out.
"""

from __future__ import annotations

from pathlib import Path

from harness.api import DataFile, DataSet
from harness.plugins.loaders import asset, dailydialog, provo, wmt14, writingprompts
from harness.plugins.loaders.pragmatics_hu import hu_paths
from harness.plugins.loaders.pragmatics_release import (
    HU_COMMIT,
    HU_DIR,
    HU_REPO,
    PHENOMENA,
    TSVILODUB_COMMIT,
    TSVILODUB_DIR,
    TSVILODUB_REPO,
)
from harness.plugins.loaders.pragmatics_tsvilodub import tsvilodub_path

RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
ASSET_REPO, ASSET_COMMIT = "facebookresearch/asset", "9d659040d0d8942dbc4cd65cf357563b43fd9ab4"
WMT14_REPO, WMT14_COMMIT = "facebookresearch/analyzing-uncertainty-nmt", "5b0760e6edc1de7c2c3b4050c3196e423ba3caf9"
DAILYDIALOG_REPO, DAILYDIALOG_COMMIT = "iitmnlp/DailyDialog-plusplus", "4b02f9ff671e7e27d8e6b8a1925158bd5729abda"

#: Per repository, one line per file: its SHA-256, its size in bytes and its path in the repository at the pinned
#: commit (``sha256sum`` with the size added), computed from the byte-for-byte copies in ../shared/data.
_SUMS = {
    ASSET_REPO: """
83dca90b5c53365a9c4a70222aed129c6df3c3f6b5da82ee94312e179b93fff1 234319 dataset/asset.valid.orig
27b0c4a40c91b875c82a8ed76ff7cf0476b03a3a6998a2e3ef6e18000efda624 193975 dataset/asset.valid.simp.0
5043e9db5934c3d538b91f56d23466177813896da10f153d2b16c0c415ac5e84 180040 dataset/asset.valid.simp.1
578dd487cf03f6f66bb4acd2c44b464c3ac9fb42dc64b8e6afd391778ebc7ea7 187445 dataset/asset.valid.simp.2
4ab95ba6f7a60adde2f57201c0b749384ce64c97f8378fb0ab185367709a8386 207902 dataset/asset.valid.simp.3
f6f1d4bf9f87b532b37d7f5700ec384f817dba10247c91df629e1f6eee6c3aa9 211459 dataset/asset.valid.simp.4
182114cfbb2960358b0e2d71737ead9a2abb0c27d3f65281335f079ae4447e3b 194418 dataset/asset.valid.simp.5
aba27b505dad048982e902a04c4ffc5ab9e926b38d2383920aea798fd42de376 188962 dataset/asset.valid.simp.6
73d7983107eca6b98a9aec62ea75ea8d5adf313755b7e105608f212dead124cd 196950 dataset/asset.valid.simp.7
58f8e1109d87a4e3c5403705b8782750bb849cb8389a698156e00ca6512dd5c4 213056 dataset/asset.valid.simp.8
35a861e174ce5458fdcd1866e49aa84297fcb6b51fd98d6633b71932a646832e 220962 dataset/asset.valid.simp.9
673ceb2672a37168a52040d75e16f9ffd1e3777b9f68e19207f2adf6542723f1 43745 dataset/asset.test.orig
66f36029d0c732eb92886021faefe531c6cfd0a32bdbe7ae4aa97fd45bd1b046 35457 dataset/asset.test.simp.0
d323ceb364abbe84c79b14b028aa1ff563cd94955fbab19049612548dbb0f83f 34096 dataset/asset.test.simp.1
786b55f8425ce4a993e98be5e2bea9ef87bf536b96dc13f7a57c4733fdb63e06 34348 dataset/asset.test.simp.2
e211c9e2ede1dfe315097132dbe4feda76b309bdc636a5394cb5d2664ba5bf52 37292 dataset/asset.test.simp.3
37be9cf0592c0f68d87848dc9c442fe62f344518c1993896c00788bf943b755d 35887 dataset/asset.test.simp.4
8485210573a3bd76116de8e978b227677c6c207111a4938729397c4e603dfa46 35351 dataset/asset.test.simp.5
f0cb3ab823d23203ea044f81bd7e67cc823db0632095e43b78a54a9891a0b0a8 35846 dataset/asset.test.simp.6
35cbb8b9964252a1470607634f19ad946c6bc2951b3e500eedd826baf12bd3c8 34560 dataset/asset.test.simp.7
047b6419590b88f93b435d3177bba1883dc9c0dc178676e48470b408236446f4 35830 dataset/asset.test.simp.8
3f5745e4f2743563b88ea4284ec35fa4ddb68d62de80b63ffb87751b998fe6b8 35313 dataset/asset.test.simp.9
""",
    WMT14_REPO: """
edf552f7dc52381ccf07d0a2e3db32ae6753900a242bc9b5be9197bda220bf25 184354 wmt14-en-de.extra_refs.gz
be2c310785f796f64559fd340237a2b49eb4978ec02945ba5dfaf444c41a2569 166685 wmt14-en-fr.extra_refs.gz
""",
    DAILYDIALOG_REPO: """
afbdee92c9ab372f599c605609676fceba517f83286d58555f0404f4364b5bfa 1226933 dataset/dev.json
e8202c3d4b11008a13061b15c4d8ce1f6d05baa9104a9c1f5caa5450134522fa 1326667 dataset/test.json
610f542a37889c90f7db90b2f3239b296cab78884c2f78e78c2da7a2440e5aa4 2181397 dataset/test-v1.0.json
""",
    HU_REPO: """
73a3f72927128f35c23bd891514e5a9a33c4e2d1b391bf8c64d936c25e4b14dc 3834 fj_raw_data/CoherenceInferenceScenarios.txt
760f1c5d7155b34bbced1597fcdb636b225e96d27b9a23587a926676594b1786 709 fj_raw_data/CoherenceInferenceKeySimple.txt
af32f385f8ffadd8c09d9c946771a08606c7ba5587b74e66a8ef0d8c5451be2f 133 fj_raw_data/CoherenceInferenceInstructions.txt
ca7615cc780c5779aa3b3d39119f2e570e89f8f878b6950d2fc1325384ba14dc 507320 human_data/fj/Human_CoherenceInference.csv
7ff6e23cda9abf7883eec66404c799eca936f6563f18c5061953d4dece581c0d 7011 fj_raw_data/DeceitsScenarios.txt
79bf978230d4ba1918eb027628e9e70ec37ef25af05c1f5ba435d40574152e96 1363 fj_raw_data/DeceitsKeySimple.txt
fd3f521ed1e5e5c2acb1cbfaab1c65de8f4845aa205096cbedc2981f9c3dbcce 5804 fj_raw_data/DeceitsOptions.txt
a58b7026fe1392fb2d546e8f4e31967593f04f2cdfd3a32ecb1bee1800b1a4df 35452 fj_raw_data/DeceitsKeyComplex.txt
7fe527261a61f87669177ca4baaf9b360aadbc54c2d1b2daab943aa707017fc1 330 fj_raw_data/DeceitsInstructions.txt
62aec169997e86966f7f6018c242a660fd0417f939603ce20ebb551b2d1ce99b 226359 human_data/fj/Human_Deceits.csv
9b4fd08177a07cbb075140f7792a2a6978eaf4d8cf25e980db313cee9b9df826 5788 fj_raw_data/HumourScenarios.txt
cfbf720eff915576f7e71736d3a8b542322b22d1db672636fda618f9ed1d0eb4 2278 fj_raw_data/HumourKeySimple.txt
fdacf6ffbfbd5e00243172a9863f77f09baf099d0913310544d2883d6fe8b678 7195 fj_raw_data/HumourOptions.txt
a78858d7aa7fa2936f119c5f537c89d92783f9faeb1454f8635dd7584f2186f0 3628 fj_raw_data/HumourKeyComplex.txt
dcdc816d6c014230e615be413cada3e65431f55178bf66cee0f5aa99593918a9 260 fj_raw_data/HumourInstructions.txt
c687563397301de580de38d499161153773b95a969b002b4eac4e4fcb6ba4b32 284054 human_data/fj/Human_Humour.csv
8f547ef15d3c4e36353f753b80346f7c4883c28e7d6fee802b0b8a2237e37175 4230 fj_raw_data/IndirectSpeechScenarios.txt
4e8a376d4b70ad29b7ffd057a1346b0221843601d95433713112ec7509bba8e1 1522 fj_raw_data/IndirectSpeechKeySimple.txt
16808d02c641d2e93ee1b31fa5292a1617ebd94a073ae2cb7dea120cb4044e07 4195 fj_raw_data/IndirectSpeechOptions.txt
c62be37ff2913ace68b8fa2fa425ac57513cedf5c9f087e59ddac9096d00667e 2362 fj_raw_data/IndirectSpeechKeyComplex.txt
ff527566137946bf05aba599bd7207ae0c5bb9ed3a8d0d9b526981c75fcf6fde 285 fj_raw_data/IndirectSpeechInstructions.txt
004169573feb213b82c71d5b495ec4095ce8acc7ab63d76f2edb1bb4c5da198e 233839 human_data/fj/Human_IndirectSpeech.csv
1faa8bceb282de917af246e11ec730ac19338ce5dc766d91c7dba5f39234c97c 6211 fj_raw_data/IronyScenarios.txt
8aa9ebb232c5b8ff2c289afbc7fe40adabfa8b6aab8638873e8a04af51d46526 1812 fj_raw_data/IronyKeySimple.txt
6b920e836eb74957d103ade66e94a723871abde4c9b87d8d11ad9b2435e9d9c2 4173 fj_raw_data/IronyOptions.txt
522af6577113667313a12c0b6e55e8d2ce3e2f986457e34eb93b97df6698c13f 2735 fj_raw_data/IronyKeyComplex.txt
ff527566137946bf05aba599bd7207ae0c5bb9ed3a8d0d9b526981c75fcf6fde 285 fj_raw_data/IronyInstructions.txt
0631fa6a196fcb708a8a04ffd1e6f4a7876a268b64e4282338c41b1e5b180065 284054 human_data/fj/Human_Irony.csv
c90e9b592847cd3c6c3524c46df11351b68d6c37d998e3d6f50571c5840ac8b7 4661 fj_raw_data/MaximsScenarios.txt
4384ce0b93c9a9e460a8945400cdb96a9297ffab341ecd251fba661cfd6e5c6e 1442 fj_raw_data/MaximsKeySimple.txt
3dcb9c39c6413e7f1cafe80578b0896762835e6896a2fe9e9df74aa725e7582f 4913 fj_raw_data/MaximsOptions.txt
cc6a87c53d6c6806f85d3d8ce080ccc2cc0a3175d6b224b7e30823c55c0023fe 3242 fj_raw_data/MaximsKeyComplex.txt
637b76031597d2219881aa80b5639a35fa29b735f1308ba48b1825b8db065063 290 fj_raw_data/MaximsInstructions.txt
c27b5a8f4dcc49b8625eea9971eb3a63133c22da6f81ecee699f7fac8da3df97 226359 human_data/fj/Human_Maxims.csv
fa67c87fe0a629a963599bd13e635371f4f4d38ea329cac285fafdcb572bc5ea 2700 fj_raw_data/MetaphorScenarios.txt
64bb12fafb60027e626de93412890fd3cf86728590dbcf1ba15290325ccd14dd 6187 fj_raw_data/MetaphorKeySimple.txt
b667ec46415df1e2f10647204cbdfa4a96746a034c1c8485b155028f0bf25295 5227 fj_raw_data/MetaphorOptions.txt
4c1066aea6ecd037c33021c170e792bf6a11da6bd73fb43a9de27a742402fafa 20962 fj_raw_data/MetaphorKeyComplex.txt
151fad637be2b22e8ede392aafd36a111bda5448b57aa56fe588695680add33d 229 fj_raw_data/MetaphorInstructions.txt
090a065f56d88ad01f74fd08b05a362e4337d6ad09335b2198834ae8986be26a 233839 human_data/fj/Human_Metaphor.csv
""",
    TSVILODUB_REPO: """
d5519acb9e23ff21ff137fbdd255838976b8113f59e6be7a0208d23f509b806f 93 prompt/prompts/coherence_instructions_FC.txt
772d482f8d348de0641f11f64ff818c6613a77151dbf5580f92bb53a451f96fd 150 prompt/prompts/deceits_instructions_FC.txt
4a6391bbae4481b42dbc0ba247c6e4a8e72a4b3684201d7d2ba1fa206b47a30c 171 prompt/prompts/humour_instructions_FC.txt
15f2a7fc8965f9bf424424f61a89f5f5071f294d140f3936cf64f4493b3d3165 144 prompt/prompts/indirect_speech_instructions_FC.txt
15f2a7fc8965f9bf424424f61a89f5f5071f294d140f3936cf64f4493b3d3165 144 prompt/prompts/irony_instructions_FC.txt
15f2a7fc8965f9bf424424f61a89f5f5071f294d140f3936cf64f4493b3d3165 144 prompt/prompts/maxims_instructions_FC.txt
15f2a7fc8965f9bf424424f61a89f5f5071f294d140f3936cf64f4493b3d3165 144 prompt/prompts/metaphor_instructions_FC.txt
""",
}


def _files(repo: str, commit: str, local: str, paths: list[str]) -> tuple[DataFile, ...]:
    """The files at ``paths`` in ``repo`` (at ``commit``), placed under ``local`` in the data root, with their pins."""
    pins = {
        path: (sha256, int(size))
        for sha256, size, path in (line.split(" ", 2) for line in _SUMS[repo].strip().splitlines())
    }
    return tuple(
        DataFile(f"{local}/{path}", RAW.format(repo=repo, commit=commit, path=path), *pins[path]) for path in paths
    )


def _pragmatics_files() -> tuple[DataFile, ...]:
    """Every file the pragmatics loader reads in its official format, with either ``descriptions`` option."""
    root = Path("pragmatics-mcq")
    hu = [p for phenomenon in PHENOMENA for p in hu_paths(root, phenomenon, True).values()]
    tsvilodub = [tsvilodub_path(root, phenomenon) for phenomenon in PHENOMENA]
    return _files(
        HU_REPO, HU_COMMIT, f"{root}/{HU_DIR}", [p.relative_to(root / HU_DIR).as_posix() for p in hu]
    ) + _files(
        TSVILODUB_REPO,
        TSVILODUB_COMMIT,
        f"{root}/{TSVILODUB_DIR}",
        [p.relative_to(root / TSVILODUB_DIR).as_posix() for p in tsvilodub],
    )


def _at(repo: str, commit: str) -> str:
    return f"https://github.com/{repo} at commit {commit}"


ASSET = DataSet(
    name="asset",
    title="ASSET sentence simplification: 10 human simplifications per source (Alva-Manchego et al., 2020)",
    source=_at(ASSET_REPO, ASSET_COMMIT),
    license="CC BY-NC 4.0 (the repository's LICENSE)",
    files=_files(
        ASSET_REPO,
        ASSET_COMMIT,
        "asset",
        [
            f"dataset/{name}"
            for split in asset.SPLITS
            for name in [f"asset.{split}.orig", *(f"asset.{split}.simp.{k}" for k in range(asset.N_REFS))]
        ],
    ),
    note="the dataset/ files the loader reads; human_ratings/ is not fetched",
    derived=("asset/asset_valid.jsonl", "asset/asset_test.jsonl"),
)

WMT14 = DataSet(
    name="wmt14-multiref",
    title="WMT'14 newstest2014 with 10 extra human references per source (Ott et al., 2018)",
    source=_at(WMT14_REPO, WMT14_COMMIT),
    license="CC BY-NC 4.0 (the repository's LICENSE and README)",
    files=_files(
        WMT14_REPO, WMT14_COMMIT, "wmt14-multiref/original", [f"wmt14-{p}.extra_refs.gz" for p in wmt14.PAIRS]
    ),
    derived=tuple(f"wmt14-multiref/wmt14_{pair}_multiref.jsonl" for pair in wmt14.PAIRS),
)

DAILYDIALOG = DataSet(
    name="dailydialog-plusplus",
    title="DailyDialog++: 5 human relevant responses per dialogue context (Sai et al., 2020)",
    source=_at(DAILYDIALOG_REPO, DAILYDIALOG_COMMIT),
    license=(
        "none stated for the data (the repository's MIT LICENSE is its website template's; DailyDialog has its own "
        "terms)"
    ),
    files=_files(
        DAILYDIALOG_REPO,
        DAILYDIALOG_COMMIT,
        "dailydialog-plusplus",
        [f"dataset/{name}" for name in [*(f"{split}.json" for split in dailydialog.SPLITS), dailydialog.TOPICS_FILE]],
    ),
    note="dev, test and the topics file the loader reads; train.json is not fetched (the loader does not read it)",
)

PRAGMATICS = DataSet(
    name="pragmatics-mcq",
    title="Pragmatic interpretation items with 374 people's choices (Hu et al., 2023; Tsvilodub et al., 2024)",
    source=f"{_at(HU_REPO, HU_COMMIT)}; {_at(TSVILODUB_REPO, TSVILODUB_COMMIT)}",
    license="none stated (neither repository has a license file)",
    files=_pragmatics_files(),
    note="the item files and trial-level choices (hu2023/) and the task descriptions (tsvilodub2024/) the loader reads",
    derived=("pragmatics-mcq/pragmatics_items_human_counts.jsonl",),
)

PROVO = DataSet(
    name="provo",
    title="Provo Corpus predictability norms: about 40 next-word guesses per position (Luke & Christianson, 2018)",
    source=f"{provo.OSF_NORMS_URL} (OSF project {provo.OSF_PROJECT_URL})",
    license="none stated in any source looked at (distributed on OSF)",
    files=(DataFile(f"provo/{provo.OFFICIAL_CSV}", provo.OSF_NORMS_URL),),
    note=(
        "no SHA-256 pinned: the official OSF file was never available to this project (the copies in "
        "../shared/data/provo are derived tables); 'fetch provo' downloads it unverified, checks its header, and "
        "prints the SHA-256 it got; 'fetch all' leaves it out"
    ),
    check=provo._check_norms_header,
    derived=(f"provo/{provo.POSITIONS_JSONL}", f"provo/{provo.RESPONSES_CSV}"),
    max_bytes=provo.DOWNLOAD_MAX_BYTES,
)

def _fetch_writingprompts_test(root: Path) -> None:
    """The archive's test split, extracted where the loader reads it (a module-level function: the registry, with
    its data sets, is pickled for worker processes)."""
    writingprompts._download_split(root / "writingprompts", "test")


WRITINGPROMPTS = DataSet(
    name="writingprompts",
    title="WritingPrompts: story prompts with several human stories each (Fan et al., 2018)",
    source=f"{writingprompts.RELEASE_URL} (linked from {writingprompts.README_URL})",
    license="none stated in any source looked at",
    files=tuple(
        DataFile(f"writingprompts/{writingprompts.OFFICIAL_DIR}/test.{kind}", writingprompts.RELEASE_URL)
        for kind in ("wp_source", "wp_target")
    ),
    note=(
        "no SHA-256 pinned: the release was never available to this project; 'fetch writingprompts' downloads the "
        "archive unverified and extracts the test split the task reads; 'fetch all' leaves it out"
    ),
    fetcher=_fetch_writingprompts_test,
    derived=("writingprompts/writingprompts_test.jsonl",),
)

#: The built-in data sets, in the order ``harness data list`` shows them.
DATA_SETS: tuple[DataSet, ...] = (ASSET, WMT14, DAILYDIALOG, PRAGMATICS, PROVO, WRITINGPROMPTS)

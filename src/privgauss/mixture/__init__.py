"""Private Gaussian-mixture building blocks without public data (Kamath, Sheffet, Singhal,
Ullman 2019, "Differentially Private Algorithms for Learning Mixtures of Separated Gaussians").

One module per building block, each with its own guarantee and neighbour relation (replace one
row, n public):

* :mod:`.private_pca` — Analyze-Gauss private PCA (Dwork–Talwar–Thakurta–Zhang 2014; KSSU19 §3).
* :mod:`.one_cluster` — private 1-cluster / location: GoodRadius by AboveThreshold on the capped
  score, GoodCenter by a randomly rotated and shifted box grid plus noisy averages (a simplified
  Nissim–Stemmer 2018 search; KSSU19 App. B, Alg. 5).
* :mod:`.terrific_ball` — secluded ("terrific") balls: TerrificRadius (KSSU19 Alg. 2) and the
  full private terrific-ball search with its verification query (KSSU19 §5.1, Lemma 5.7).
"""

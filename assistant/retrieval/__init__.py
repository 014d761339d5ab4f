"""Finding the papers for a question: dense heads over chunks and sentences fused with BM25."""
